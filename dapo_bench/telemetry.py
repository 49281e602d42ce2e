"""Watching a run: its scalars written to TensorBoard or W&B while it runs (``--report-to``).

``dapo-bench train`` and ``dapo-bench eval`` open one :func:`recording` around their work (the
HF Trainer / TRL convention: ``--report-to tensorboard|wandb|none``, default none); inside it
the code that already holds a number reports it, each from one place:

- :func:`train_step`: the one training loop (``training.loop``), after every optimiser step of
  every method: the loss's statistics (loss, KL or log-ratio statistics, ...), gradient norm,
  learning rate, tokens/s and the FLOPs of the ledger the step charged;
- :func:`scalars`: a stage's own numbers at the current step (the reward mean and std of
  every sampling stage, ``training.rollouts``; of every online step, ``training.online``);
- :func:`stage_record`: every number of a finished stage's record (``methods.context``: e.g.
  DAPO's critic's loss, held-out Brier score and ECE);
- :func:`eval_metrics`: every metric of every eval task, with its stderr.

Tags are ``<stage>/<name>`` (stage: the ledger's stage name, e.g. ``it1.actor``, ``train``,
``control``); the x axis is the run's optimiser steps so far (in this process). The names are
listed in docs/watching.md ("Watching a run"). Several ranks: every rank enters the recording
(so code that must run collectives for it does so on all ranks), rank 0 alone writes. Nothing
is written with ``none`` and nothing is computed for it either: every hook returns at once
(only the step count moves on).

Writers: TensorBoard event files under ``<run dir>/tensorboard/`` (tensorboard's own
``EventFileWriter``: no torch, no TensorFlow; the ``tensorboard`` extra); W&B (the ``wandb``
extra, imported only when asked for) under ``<run dir>/wandb/``; it honours its own
environment, e.g. ``WANDB_MODE=offline`` for a machine without network.

A resumed run (``train`` rerun after an interrupt) writes a new event file and goes on from the
step where the marker of its last finished stage, or the checkpoint it resumes from
(``--checkpoint-every``), left the x axis (:func:`position`, :func:`resume`). ``train`` counts
its optimiser steps with ``none`` too (:func:`count_step`), so a run started without
``--report-to`` and resumed with it goes on at the uninterrupted run's steps.

Not covered: resuming a run whose markers were written before the step was kept (the x axis
starts at 0); histograms, text or images; several recordings at once in one process.
"""

from __future__ import annotations

import importlib.util
import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dapo_bench import dist
from dapo_bench.errors import UserError

REPORT_TO = ("none", "tensorboard", "wandb")
# the help of eval's and train's --report-to
REPORT_TO_HELP = ("where the run's scalars go while it runs: none | tensorboard (RUN_DIR/"
                  "tensorboard/) | wandb (RUN_DIR/wandb/; WANDB_MODE=offline without network); "
                  "docs/watching.md")


def check_report_to(value: str) -> str:
    """``value`` if it names a writer whose package is installed; else a one-line UserError."""
    if value not in REPORT_TO:
        raise UserError(f"--report-to {value!r}: expected one of {' | '.join(REPORT_TO)}")
    if value != "none" and importlib.util.find_spec(value) is None:
        raise UserError(f"--report-to {value}: the {value} package is not installed "
                        f"(pip install 'dapo-bench[{value}]')")
    return value


class Recording:
    """One run's writer (None on ranks other than 0, and with ``none``) and its step count;
    ``on``: whether anything is reported (not ``none``)."""

    def __init__(self, writer: Any, on: bool = True):
        self.writer = writer
        self.on = on
        self.step = 0
        self._once: dict[str, tuple[int, float]] = {}  # once-per-stage tags: (step, value)

    def write(self, values: dict[str, float], once: bool = False) -> None:
        """``values`` at the current step; ``once``: leave out a tag already written with the
        same value at this step (a stage record read again, e.g. an eval asked for twice)."""
        if once:
            seen = self._once
            values = {k: v for k, v in values.items() if seen.get(k) != (self.step, v)}
            seen.update((k, (self.step, v)) for k, v in values.items())
        if self.writer is not None and values:
            self.writer.write(values, self.step)


_ACTIVE: list[Recording | None] = [None]


@contextmanager
def recording(report_to: str, run_dir: str | os.PathLike, *, name: str,
              config: dict | None = None) -> Iterator[Recording | None]:
    """Report to ``report_to`` for the ``with`` body (``none``: nothing is opened or written;
    the steps are still counted, for a resumed run's x axis)."""
    check_report_to(report_to)
    writer = None
    if dist.is_main() and report_to != "none":
        writer = (_TensorBoard(Path(run_dir) / "tensorboard") if report_to == "tensorboard"
                  else _WandB(Path(run_dir), name, config))
    rec = Recording(writer, on=report_to != "none")
    before, _ACTIVE[0] = _ACTIVE[0], rec
    try:
        yield rec
    finally:
        _ACTIVE[0] = before
        if writer is not None:
            writer.close()


def position() -> dict[str, int]:
    """The x axis so far (optimiser steps, counted with ``none`` too), for a stage's marker or
    checkpoint to keep (``{}`` outside a recording)."""
    rec = _ACTIVE[0]
    return {"telemetry_step": rec.step} if rec is not None else {}


def resume(saved: dict) -> None:
    """Continue the x axis where a finished stage's marker or a checkpoint left it: a resumed
    run's steps are the uninterrupted run's (TensorBoard's reader drops the steps the killed
    run wrote after the checkpoint once the rerun writes them again)."""
    rec = _ACTIVE[0]
    if rec is not None and "telemetry_step" in saved:
        rec.step = int(saved["telemetry_step"])


def _on() -> Recording | None:
    rec = _ACTIVE[0]
    return rec if rec is not None and rec.on else None


def active() -> bool:
    """Whether a recording that reports is open (on every rank, rank 0 or not)."""
    return _on() is not None


def count_step() -> None:
    """One optimiser step done (the training loop calls it after every step, reported or
    not): the x axis moves on."""
    rec = _ACTIVE[0]
    if rec is not None:
        rec.step += 1


def train_step(stage: str, row: dict[str, float], *, tokens: int, seconds: float,
               flops: float | None) -> None:
    """The optimiser step just counted (:func:`count_step`): ``row`` (the step's statistics,
    gradient norms and learning rates), its tokens/s and the ledger's FLOPs so far."""
    rec = _on()
    if rec is None:
        return
    extra = {"tokens_per_s": tokens / seconds if seconds > 0 else None, "flops": flops}
    rec.write(_tagged(stage, {**row, **extra}))


def scalars(stage: str, values: dict[str, Any]) -> None:
    """``values`` as ``<stage>/<name>`` at the current step."""
    rec = _on()
    if rec is not None:
        rec.write(_tagged(stage, values))


def reward_stats(n: float, total: float, squares: float) -> dict[str, float]:
    """``reward_mean`` and ``reward_std`` (population) of ``n`` rewards from their sum and
    their sum of squares (sums that several ranks can add up)."""
    n = max(n, 1)
    mean = total / n
    return {"reward_mean": mean, "reward_std": math.sqrt(max(squares / n - mean * mean, 0.0))}


def stage_record(stage: str, info: dict[str, Any]) -> None:
    """Every number of a finished stage's record, nested dicts one level deep, as
    ``stage/<stage>/<key>`` (``<key>.<sub>`` for a nested one)."""
    rec = _on()
    if rec is None:
        return
    flat: dict[str, Any] = {}
    for k, v in info.items():
        if isinstance(v, dict):
            flat.update({f"{k}.{kk}": vv for kk, vv in v.items()})
        else:
            flat[k] = v
    rec.write(_tagged(f"stage/{stage}", flat), once=True)


def eval_metrics(prefix: str, tasks: dict[str, dict[str, Any]]) -> None:
    """``tasks``: {task: {metric: {value, stderr}}} -> ``<prefix>/<task>/<metric>`` and
    ``<prefix>/<task>/<metric>_stderr``."""
    rec = _on()
    if rec is None:
        return
    out: dict[str, Any] = {}
    for task, metrics in tasks.items():
        for m, v in metrics.items():
            if isinstance(v, dict):
                out[f"{task}/{m}"] = v.get("value")
                out[f"{task}/{m}_stderr"] = v.get("stderr")
    rec.write(_tagged(prefix, out), once=True)


def _tagged(prefix: str, values: dict[str, Any]) -> dict[str, float]:
    """``prefix/name`` -> float for the numbers among ``values`` (bools, None, text and lists
    are left out)."""
    return {f"{prefix}/{k}": float(v) for k, v in values.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


class _TensorBoard:
    """Event files of one run: one event per write, holding every value of that step."""

    def __init__(self, log_dir: Path):
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self._event, self._summary = Event, Summary
        self._w = EventFileWriter(str(log_dir), max_queue_size=1000, flush_secs=30)

    def write(self, values: dict[str, float], step: int) -> None:
        vals = [self._summary.Value(tag=k, simple_value=v) for k, v in values.items()]
        self._w.add_event(self._event(wall_time=time.time(), step=step,
                                      summary=self._summary(value=vals)))

    def close(self) -> None:
        self._w.close()


class _WandB:
    """A W&B run (``wandb.init`` with the run's config; its own environment decides online,
    offline or disabled)."""

    def __init__(self, run_dir: Path, name: str, config: dict | None):
        import wandb

        run_dir.mkdir(parents=True, exist_ok=True)
        self._run = wandb.init(project=os.environ.get("WANDB_PROJECT", "dapo-bench"),
                               name=name, dir=str(run_dir), config=config or {},
                               settings=wandb.Settings(console="off", silent=True))

    def write(self, values: dict[str, float], step: int) -> None:
        self._run.log(values, step=step)

    def close(self) -> None:
        self._run.finish()
