"""Checkpoints inside a training stage, so a killed stage resumes at its last checkpoint
instead of from step 0 (``dapo-bench train --checkpoint-every K``).

``RunContext.run_stage`` opens a :func:`stage_scope` around each stage when the run asks for
checkpoints; the stage's training loop takes it (:func:`take`) and, every ``every`` optimizer
steps, saves into ``<run>/stages/<stage>.ckpt/``:

- each engine's state (``engine.save_state``: the torch engine's module and AdamW state,
  written by rank 0; DeepSpeed's own ``save_checkpoint`` on every rank),
- every rank's RNG states (python, torch, CUDA),
- the loop's state (``state.json``: steps, epoch and batches done in it, items, tokens, counts,
  the history and the statistics not yet logged, seconds) and the ledger's count of the loop's
  stage, so a resumed stage charges and reports every token once,

then ``latest.json`` (atomically, after every rank wrote its part) names that step and the
older step dirs go. On the rerun the loop loads the latest checkpoint whose ``key`` (stage,
total steps, ranks, engines, items per epoch) matches, skips the batches already stepped on
(``batches(epoch)`` is deterministic) and goes on: the same steps as an uninterrupted run, bit
for bit in one process. A checkpoint of another loop (other settings) is logged and ignored.
The stage's marker supersedes it: ``run_stage`` removes the dir once the stage is done.

One resumable loop per stage; taking a scope twice is an error. A stage that trains in
several loops between generation rounds (GRPO, PPO) checkpoints its outer loop instead:
``training.online.online_loop`` takes the scope and saves every K online steps (engines, RNG,
history, ledger count; the problem stream is replayed on resume), its inner
``train_loop(resume=False)`` calls do not. ``on_epoch`` of an epoch whose last batch was
checkpointed may run again on resume.
Not covered: the torch engine's state is rank 0's (every rank holds the same after a step);
a resume with another number of ranks starts the stage over.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import shutil
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import torch

from dapo_bench import dist, telemetry
from dapo_bench.io import atomic_write_json, read_json
from dapo_bench.ledger import StageCount
from dapo_bench.training.scope import Scope


@dataclasses.dataclass
class StageCheckpoint:
    """Where a stage's checkpoints go and how often (every ``every`` optimizer steps)."""

    dir: Path
    every: int
    taken: bool = False

    def due(self, step: int, total: int) -> bool:
        return step < total and step % self.every == 0

    def save(self, engines: dict[str, Any], state: dict, key: dict, scope: Scope) -> None:
        """Every rank calls it at the same step (the ledger's count of ``scope``'s stage is
        saved with the state)."""
        step = int(state["steps"])
        d = self.dir / f"step{step}"
        d.mkdir(parents=True, exist_ok=True)
        for name, e in engines.items():
            e.save_state(d / f"engine{'-' + name if name else ''}")
        torch.save(_rng_state(), d / f"rng.rank{dist.rank()}.pt")
        if dist.is_main():
            ledger = scope.ledger
            count = ledger.stages.get(scope.stage) if ledger is not None else None
            atomic_write_json(d / "state.json", {
                **state, "ledger": dataclasses.asdict(count) if count else None,
                **telemetry.position()})
        dist.barrier()  # every rank's part is on disk before latest.json names the step
        if dist.is_main():
            atomic_write_json(self.dir / "latest.json", {"step": step, "key": key})
            for old in self.dir.glob("step*"):
                if old != d:
                    shutil.rmtree(old, ignore_errors=True)
        dist.barrier()

    def load(self, engines: dict[str, Any], key: dict, scope: Scope) -> dict | None:
        """The saved loop state with engines, RNG and ledger restored; None without a
        checkpoint of this loop."""
        latest = self.dir / "latest.json"
        if not latest.is_file():
            return None
        head = read_json(latest)
        if head.get("key") != key:
            if dist.is_main():
                print(f"{self.dir}: a checkpoint of another training loop ({head.get('key')}; "
                      f"this one is {key}); starting the stage over", file=sys.stderr)
            return None
        d = self.dir / f"step{head['step']}"
        if dist.is_main():
            print(f"{self.dir}: resuming the stage at step {head['step']}", file=sys.stderr)
        for name, e in engines.items():
            e.load_state(d / f"engine{'-' + name if name else ''}")
        _set_rng_state(torch.load(d / f"rng.rank{dist.rank()}.pt", weights_only=False))
        state = read_json(d / "state.json")
        if "telemetry_step" in state:
            telemetry.resume({"telemetry_step": state.pop("telemetry_step")})
        saved = state.pop("ledger")
        if scope.ledger is not None:
            if saved:
                scope.ledger.stages[scope.stage] = StageCount(**saved)
            else:
                scope.ledger.stages.pop(scope.stage, None)
        return state


_CURRENT: ContextVar[StageCheckpoint | None] = ContextVar("stage_checkpoint", default=None)


@contextlib.contextmanager
def stage_scope(ckpt_dir: Path, every: int) -> Iterator[StageCheckpoint | None]:
    """Checkpoints for the stage run inside (``every`` 0: none)."""
    ckpt = StageCheckpoint(Path(ckpt_dir), every) if every > 0 else None
    token = _CURRENT.set(ckpt)
    try:
        yield ckpt
    finally:
        _CURRENT.reset(token)


def take() -> StageCheckpoint | None:
    """The running stage's checkpoint (None outside a checkpointed stage); one loop a stage."""
    ckpt = _CURRENT.get()
    if ckpt is None:
        return None
    if ckpt.taken:
        raise RuntimeError(f"{ckpt.dir}: a second resumable training loop in one stage "
                           "(pass resume=False to a loop that runs several times a stage)")
    ckpt.taken = True
    return ckpt


def remove(ckpt_dir: Path) -> None:
    """Rank 0 removes a finished stage's checkpoints."""
    if dist.is_main():
        shutil.rmtree(ckpt_dir, ignore_errors=True)


def _rng_state() -> dict:
    out = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        out["cuda"] = torch.cuda.get_rng_state_all()
    return out


def _set_rng_state(s: dict) -> None:
    random.setstate(s["python"])
    torch.set_rng_state(s["torch"])
    if "cuda" in s and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(s["cuda"])
