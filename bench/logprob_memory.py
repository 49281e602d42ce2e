"""Peak memory and CPU time of a training log-prob pass: ours vs the plain full log-softmax.

    nice -n 10 python bench/logprob_memory.py [--model smollm2] [--rows 16] [--context 300]
        [--context-min 300] [--response 80] [--threads 1]

One forward + backward of the summed response log-probs (what DAPO's actor, GRPO and PPO
differentiate) on ``--rows`` (context, response) pairs, random token ids, right-padded by
``pack_pairs`` as the trainers do. Contexts run evenly from ``--context-min`` to ``--context``
tokens: equal by default (the samples of one prompt, as in a GRPO/PPO group); DAPO's actor
batches states of unequal contexts (``--context-min 66 --context 353`` in the SmolLM2 run).
Model: SmolLM2-135M-Instruct (``dapo_bench.models.smollm2_dir``; 30 layers, 49,152-token
vocabulary) or a model directory. Each way runs in its own process, so ``ru_maxrss`` is that
way's peak:
- ours: ``training.batches.token_logprobs`` (the output layer only from the first response
  position on, logit - logsumexp a row at a time);
- peer: the textbook ``log_softmax(logits[:, :-1]).gather(...)`` over every position, the
  form TRL and others used before memory-saving variants (written here, not imported).
Prints both peaks, the CPU seconds of the pass (one torch thread, so the compute; robust to a
loaded machine), the ratio, and the largest difference between the two ways' log-probs.
Not covered: GPUs (the same logits dominate there), bf16.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

from script_cli import model_path  # bench/, beside this script


def one_way(way: str, model_dir: str, rows: int, cmin: int, context: int, response: int,
            threads: int) -> dict:
    import torch
    from transformers import AutoModelForCausalLM

    from dapo_bench.training.batches import pack_pairs, token_logprobs

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    vocab = model.config.vocab_size
    ctx = [torch.randint(3, vocab, (cmin + (context - cmin) * i // max(rows - 1, 1),)).tolist()
           for i in range(rows)]
    resp = [torch.randint(3, vocab, (response,)).tolist() for _ in range(rows)]
    batch = pack_pairs(ctx, resp, pad_id=0, max_length=4096)

    def peer(m, b):
        logits = m(input_ids=b.input_ids, attention_mask=b.attention_mask).logits
        logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
        out = torch.zeros(b.input_ids.shape)
        out[:, 1:] = logp.gather(2, b.input_ids[:, 1:, None])[..., 0]
        return out * b.response_mask

    fn = token_logprobs if way == "ours" else peer
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.process_time()
    lp = fn(model, batch)
    lp.sum().backward()
    cpu = time.process_time() - t
    return {"way": way, "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
            "loaded_gb": before / 1e6, "cpu_s": cpu, "shape": list(batch.input_ids.shape),
            "logprobs": lp.detach().sum(1).tolist()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--context", type=int, default=300)
    ap.add_argument("--context-min", type=int, default=300)
    ap.add_argument("--response", type=int, default=80)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--way", help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.model = model_path(a.model)
    if a.way:
        print(json.dumps(one_way(a.way, a.model, a.rows, a.context_min, a.context, a.response,
                                 a.threads)))
        return
    res = {}
    for way in ("ours", "peer"):
        cmd = [sys.executable, __file__, "--way", way, "--model", a.model, "--rows", str(a.rows),
               "--context-min", str(a.context_min), "--context", str(a.context),
               "--response", str(a.response), "--threads", str(a.threads)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        res[way] = json.loads(out.strip().splitlines()[-1])
        r = res[way]
        print(f"{way}: batch {r['shape']}, peak {r['peak_gb']:.2f} GB RSS (model loaded "
              f"{r['loaded_gb']:.2f} GB), {r['cpu_s']:.1f} CPU-s")
    o, p = res["ours"], res["peer"]
    diff = max(abs(x - y) for x, y in zip(o["logprobs"], p["logprobs"]))
    print(f"peak memory ours/peer {o['peak_gb'] / p['peak_gb']:.2f}x, CPU time ours/peer "
          f"{o['cpu_s'] / p['cpu_s']:.2f}x; largest |difference| of a row's summed log-prob "
          f"{diff:.2e} nats")


if __name__ == "__main__":
    main()
