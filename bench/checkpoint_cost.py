"""What a mid-stage checkpoint costs beside the training step it protects.

    python bench/checkpoint_cost.py [--model DIR] [--batch 4] [--length 256] [--steps 3]

Loads the model (default: SmolLM2-135M-Instruct via ``dapo_bench.models.smollm2_dir``), takes
``--steps`` SFT steps on random token rows with the torch engine (AdamW), then saves and loads
a checkpoint through ``training.checkpoint`` (what ``--checkpoint-every K`` does every K
steps) and prints the median step time, the save and load times, the checkpoint's size, and
save / step: a checkpoint every K steps adds about (save / step) / K to a stage's time.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import torch
from script_cli import parse_model_args  # bench/, beside this script

from dapo_bench.ledger import Ledger
from dapo_bench.models import load_policy
from dapo_bench.training import checkpoint
from dapo_bench.training.engine import Engine, OptimConfig


def main() -> None:
    a = parse_model_args(__doc__, "smollm2", batch=4, length=256, steps=3)
    model, _ = load_policy(a.model)
    engine = Engine(model, OptimConfig(lr=1e-6))
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (a.batch, a.length), generator=g)
    steps = []
    for _ in range(a.steps):
        t = time.perf_counter()
        out = model(input_ids=ids, labels=ids)
        engine.step(out.loss)
        steps.append(time.perf_counter() - t)
    step = statistics.median(steps)
    with tempfile.TemporaryDirectory() as tmp:
        ck = checkpoint.StageCheckpoint(Path(tmp), every=1)
        state = {"steps": a.steps, "epoch": 0, "batches_done": a.steps, "seen": 0,
                 "window": [], "totals": {}, "seconds": 0.0, "history": [], "counts": {}}
        t = time.perf_counter()
        ck.save({"": engine}, state, {"k": 1}, Ledger(n_params=1), "bench")
        save = time.perf_counter() - t
        size = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())
        t = time.perf_counter()
        ck.load({"": engine}, {"k": 1}, Ledger(n_params=1), "bench")
        load = time.perf_counter() - t
    n = sum(p.numel() for p in model.parameters())
    print(f"model {a.model}: {n / 1e6:.1f}M parameters; step on {a.batch} x {a.length} tokens, "
          f"{a.threads} thread(s)")
    print(f"step (median of {a.steps}) {step:.2f} s | save {save:.2f} s | load {load:.2f} s | "
          f"checkpoint {size / 2**30:.2f} GiB")
    print(f"save / step = {save / step:.2f}: --checkpoint-every K adds ~{100 * save / step:.0f}%/K "
          "to a stage's time")


if __name__ == "__main__":
    main()
