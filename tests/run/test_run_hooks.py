"""A concern that watches sampling is a hook the run registers once (``run.train.HOOKS``):
every method tells the run of each sampling pass (``RunContext.sampled``) and the hook sees
them all, offline (a rollouts stage) and online (each GRPO step), without touching a method.
This test adds a monitor the way a new concern would, and only there."""

from __future__ import annotations

from typing import ClassVar

import torch
from _tiny import TINY

from dapo_bench.methods.context import RunContext, Sampled
from dapo_bench.run import RunOptions, run_training
from dapo_bench.run import train as run_train


class Monitor:
    """A new concern: counts the prompts and samples of every pass (a real monitor would
    compute something from ``event.generator``'s samples)."""

    seen: ClassVar[list[tuple[str, int | None, int, int]]] = []

    def __call__(self, ctx: RunContext, event: Sampled) -> None:
        Monitor.seen.append((event.stage, event.step, event.n_problems, event.n))
        assert event.scorer is not None and event.generator is not None


def test_a_hook_registered_once_sees_every_sampling_pass(tmp_path, monkeypatch):
    torch.set_num_threads(1)
    monkeypatch.setattr(run_train, "HOOKS", [*run_train.HOOKS, Monitor])
    for method in ("rft", "grpo"):
        Monitor.seen = []
        opts = RunOptions(task="arith:sft", eval_limit=2, control=False, out=str(tmp_path),
                          run_id=method, quiet=True)
        out = run_training(method, opts, preset="toy", overrides=TINY[method])
        if method == "rft":  # one offline pass: its rollouts stage
            # n_problems=2, samples_per_prompt=2 (TINY)
            assert Monitor.seen == [("rollouts", None, 2, 2)]
        else:  # one pass per online step, numbered from 0, from the step's weights
            steps = len(out["history"])  # max_steps=2, samples_per_prompt=2 (TINY)
            assert steps == 2 and [step for _, step, *_ in Monitor.seen] == [0, 1]
            assert {(s, n) for s, _, _, n in Monitor.seen} == {("train", 2)}
