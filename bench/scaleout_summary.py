"""Throughput, MFU and accuracy of ``dapo-bench train`` runs, side by side (from results.json).

    python bench/scaleout_summary.py runs/a/results.json runs/b/results.json [--peak-tflops X]

For each run: backend, engine, wall time; generation tokens/s = generated tokens of the stages
that only generate / their seconds; training tokens/s = trained tokens of the stages that train
/ their seconds; MFU = 6 * n_params * training tokens/s / peak (bf16 dense peak of the GPU:
``--peak-tflops``, else looked up from the CUDA device name; none on CPU). Then each run's
final/reference/control accuracy per eval task, and for every run after the first, its
final-accuracy difference from the first run with the combined standard error: "agree" when
|diff| <= 2 stderr (the two runs differ by sampling noise only).

Not covered: stages that mix generation and training are counted as training; evaluation
(greedy, not in the ledger) is excluded from both rates.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

# dense bf16 tensor-core peaks (TFLOP/s, no sparsity), by substring of the CUDA device name
BF16_PEAK_TFLOPS = {
    "H200": 989.0, "H100 SXM": 989.0, "H100 NVL": 835.0, "H100 PCIe": 756.0, "H100": 989.0,
    "GH200": 989.0, "B200": 2250.0, "A100": 312.0, "A800": 312.0, "L40S": 362.0, "L40": 181.0,
    "L4": 121.0, "A10G": 70.0, "A10": 125.0, "RTX 4090": 165.0, "A6000": 155.0,
}


def gpu_peak_tflops() -> tuple[str, float | None]:
    try:
        import torch
    except ImportError:
        return "cpu", None
    if not torch.cuda.is_available():
        return "cpu", None
    name = torch.cuda.get_device_name(0)
    for key, peak in BF16_PEAK_TFLOPS.items():
        if key in name:
            return name, peak
    return name, None


def rates(res: dict) -> dict:
    stages = res["ledger"]["stages"]
    secs = res.get("stage_seconds", {})
    gen_tok = gen_s = train_tok = train_s = 0.0
    for name, count in stages.items():
        s = float(secs.get(name, 0.0))
        if count.get("n_train", 0):
            train_tok, train_s = train_tok + count["n_train"], train_s + s
        elif count.get("n_inf", 0):
            gen_tok, gen_s = gen_tok + count["n_inf"], gen_s + s
    return {
        "gen_tokens": gen_tok, "gen_s": gen_s, "gen_tps": gen_tok / gen_s if gen_s else None,
        "train_tokens": train_tok, "train_s": train_s,
        "train_tps": train_tok / train_s if train_s else None,
    }


def engine_of(res: dict) -> str:
    cfg = res.get("config", {})
    optim = (cfg.get("actor") or {}).get("optim") or cfg.get("optim") or {}
    return str(optim.get("deepspeed") or res.get("deepspeed") or "?")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--peak-tflops", type=float, default=None, help="bf16 dense peak per GPU")
    ap.add_argument("--label", action="append", default=[], help="name per run, in order")
    args = ap.parse_args()
    device, peak = gpu_peak_tflops()
    peak = args.peak_tflops or peak
    runs = [json.loads(p.read_text()) for p in args.results]
    labels = args.label + [r["run_id"] for r in runs[len(args.label):]]
    print(f"device: {device}; bf16 peak: {f'{peak:g} TFLOP/s' if peak else 'n/a'}")
    for label, res in zip(labels, runs):
        r = rates(res)
        n = res["ledger"]["n_params"]
        wall = res.get("provenance", {}).get("wall_seconds")
        mfu = (6 * n * r["train_tps"] / (peak * 1e12)) if (peak and r["train_tps"]) else None
        gen = f"{r['gen_tps']:,.0f}" if r["gen_tps"] else "-"
        train = f"{r['train_tps']:,.0f}" if r["train_tps"] else "-"
        wall = "?" if wall is None else f"{wall:.1f}"
        print(f"[{label}] backend={res.get('backend')} n_params={n:,} wall={wall}s  "
              f"generation {gen} tok/s ({r['gen_tokens']:,.0f} tok in {r['gen_s']:.1f}s)  "
              f"training {train} tok/s ({r['train_tokens']:,.0f} tok in {r['train_s']:.1f}s)  "
              f"MFU {f'{100 * mfu:.4f}%' if mfu is not None else 'n/a'}")
        for task, m in res["evals"]["final"].items():
            ref = res["evals"].get("reference", {}).get(task, {})
            ctl = res["evals"].get("control", {}).get(task, {})
            fmt = (lambda d: f"{100 * d['value']:.1f}±{100 * (d.get('stderr') or 0):.1f}"
                   if d else "-")
            print(f"    {task}: reference {fmt(ref)}  final {fmt(m)}  control {fmt(ctl)}")
    base_label, base = labels[0], runs[0]
    for label, res in zip(labels[1:], runs[1:]):
        for task, m in res["evals"]["final"].items():
            b = base["evals"]["final"].get(task)
            if b is None:
                continue
            diff = m["value"] - b["value"]
            se = math.hypot(m.get("stderr") or 0, b.get("stderr") or 0)
            verdict = "agree" if abs(diff) <= 2 * se else "DIFFER"
            print(f"{label} vs {base_label} on {task}: final {100 * diff:+.1f} ± "
                  f"{100 * se:.1f} points -> {verdict} (|diff| <= 2 se)")


if __name__ == "__main__":
    main()
