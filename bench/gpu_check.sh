#!/usr/bin/env bash
# One-GPU check of the scale-out path: the toy DAPO pipeline with vLLM generation and DeepSpeed
# ZeRO-2 training (bf16), then generation tokens/s, training tokens/s and MFU against the GPU's
# bf16 dense peak (bench/scaleout_summary.py; override the peak with PEAK_TFLOPS=...).
#
#   pip install torch && pip install -e '.[vllm,deepspeed]'   # CUDA torch, then the extras
#   bash bench/gpu_check.sh                                   # < 8 minutes on one GPU
#
# What it runs: `dapo-bench train --method dapo` on the embedded arith task with the shipped
# toy reference policy (0.68M parameters), a smaller problem count than the toy preset, the
# SFT control off, evaluation on the first 500 problems per task. MFU of a 0.68M-parameter model
# is tiny by nature (kernel launches, not FLOPs, bound it): this checks that the path runs and
# shows the order of magnitude; real MFU figures need a real model (--model, --task).
# Not covered: several GPUs (see README "Scaling out"), models that do not fit one GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python - <<'EOF'
import sys
import torch
if not torch.cuda.is_available():
    sys.exit("gpu_check: no CUDA device visible to torch; this script is for one-GPU machines")
missing = [m for m in ("vllm", "deepspeed") if __import__("importlib").util.find_spec(m) is None]
if missing:
    sys.exit(f"gpu_check: missing {', '.join(missing)}: pip install -e '.[vllm,deepspeed]'")
print(f"torch {torch.__version__}, device {torch.cuda.get_device_name(0)}")
EOF

OUT=${OUT_DIR:-runs/gpu_check}
RUN=${RUN_ID:-dapo-vllm-zero2-$(date +%Y%m%d-%H%M%S)}
# vLLM shares the GPU with the trainer: keep its memory share modest.
VLLM_DEFAULT='{"gpu_memory_utilization": 0.4, "dtype": "bfloat16"}'
export DAPO_BENCH_VLLM_ARGS=${DAPO_BENCH_VLLM_ARGS:-$VLLM_DEFAULT}
# DeepSpeed bf16 for the actor/critic engines, set through the DeepSpeed config override.
DS_JSON=$(mktemp --suffix .json)
echo '{"bf16": {"enabled": true}}' > "$DS_JSON"
export DAPO_BENCH_DS_CONFIG=${DAPO_BENCH_DS_CONFIG:-$DS_JSON}

start=$(date +%s)
timeout 480 dapo-bench train --method dapo --backend vllm --deepspeed zero2 \
  --set n_problems=128 --no-control --eval-limit 500 \
  --out "$OUT" --run-id "$RUN" --quiet
echo "pipeline wall time: $(( $(date +%s) - start )) s (limit 480 s)"
python bench/scaleout_summary.py "$OUT/$RUN/results.json" --label "vllm+zero2" \
  ${PEAK_TFLOPS:+--peak-tflops "$PEAK_TFLOPS"}
rm -f "$DS_JSON"
