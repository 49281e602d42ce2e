"""What a method sees while it runs: :class:`RunContext` (run dir, options, ledger, stages,
progress, the policy in memory, the generator, the training engine's settings).

Policies go from stage to stage as ``models.Policy`` handles: :meth:`RunContext.policy` gives
the handle of a saved dir (the one the run holds, model already in memory, when it is that
dir), a training stage that trained it in place saves it (``Policy.save``) and hands the new
handle to :meth:`RunContext.adopt`, and :meth:`RunContext.generator` serves a handle (the hf
backend shares its model). A stage skipped on resume loads nothing; the next stage that needs
the policy reads its dir once.

Stages go through :meth:`RunContext.run_stage`: a stage is skipped when its marker
``stages/<name>.json`` exists (it stores the stage's ledger counts and wall time, so an
interrupted run resumes where it stopped and still reports the full ledger). A stage stopped by
an exception (Ctrl-C) leaves ``stages/<name>.partial.json`` with the seconds it ran, added to
the stage's time when it finishes, so a resumed run reports the seconds of all its parts.

Several ranks (``torchrun`` / ``deepspeed`` launcher, WORLD_SIZE > 1): every rank does its
share. Stages run with ``every_rank=True`` run on all ranks: generation and evaluation shard
their chunks over the ranks (``sample_groups(shard=True)``, ``evaluate``), training gives each
rank its share of every batch (``training.loop``), scoring passes shard their items
(``dist.map_shards``); rank 0 alone writes shared artifacts and the stage marker. Bookkeeping
stages (``every_rank=False``) run on rank 0 alone inside ``dist.solo()`` while the others wait,
then read its marker, as a resumed run does. The run dir must be visible to every rank (one
node, or a shared filesystem).

With ``--checkpoint-every K`` a training stage saves a checkpoint every K steps (optimizer
steps; online steps for GRPO/PPO) (``stages/<name>.ckpt/``,
:mod:`dapo_bench.training.checkpoint`) and a rerun resumes from the last one; the dir goes
once the marker is written.

Hooks: what watches a run without being part of any method (the canaries of
``methods/canaries.py``; a monitor) is a function ``hook(ctx, event)`` the run registers once
(``run/train.py``: ``ctx.hooks``). Methods tell the run of each sampling pass of their policy,
whatever they go on to do with it, through :meth:`RunContext.sampled` (a :class:`Sampled`: the
stage, what sampled, the scorer, the parameters; the online step); every hook sees every pass.
A new concern registers a hook there and touches no method (docs/architecture.md).

Scope: every trainer and sampling pass of a stage gets the stage's cross-cutting pieces as one
value, :meth:`RunContext.scope` (a ``training.scope.Scope``: the ledger under the stage's name,
its progress bar, the run's ``meters``), not as ``ledger=, stage=`` keywords. A concern that
every stage carries (a token meter, a token budget) is a field of the scope that this method
fills: no trainer's or method's signature changes.

Not covered: resuming in the middle of a stage that is neither append-only nor checkpointed
(eval stages rerun their unfinished tasks from the samples log).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from dapo_bench import dist, telemetry
from dapo_bench.generation.base import Generator, SamplingParams
from dapo_bench.io import atomic_write_json, read_json
from dapo_bench.ledger import Ledger, StageCount
from dapo_bench.methods.options import RunOptions
from dapo_bench.methods.scorer import Scorer
from dapo_bench.models import Policy
from dapo_bench.tasks.task import Task
from dapo_bench.training import checkpoint
from dapo_bench.training.rollouts import TrainProblem
from dapo_bench.training.scope import Meter, Scope

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


@dataclasses.dataclass(frozen=True)
class Sampled:
    """One sampling pass of a method's policy, as the run's hooks see it: ``n`` samples per
    prompt from ``generator`` (the weights that sampled) with ``params``, judged by ``scorer``
    (the training task's ``methods.scorer.Scorer``); ``encode(task)`` is how the run turns a
    task's problems into prompts (``methods.data.load_train_problems``). Offline passes (a
    rollouts stage) have ``step`` None and ``n_problems`` the problems sampled; an online step
    has its ``step`` (0-based), ``n_prompts`` its prompts, and ``n_problems`` the run's."""

    stage: str
    generator: Generator
    scorer: Scorer
    n_problems: int
    n: int
    params: SamplingParams
    encode: Callable[[Task], list[TrainProblem]]
    step: int | None = None
    n_prompts: int = 0


Hook = Callable[["RunContext", Sampled], None]


class RunContext:
    """What a method sees: run dir, options, ledger, stages, progress, models and data."""

    def __init__(self, run_dir: Path, opts: RunOptions, n_params: int, method: str):
        self.run_dir = run_dir
        self.opts = opts
        self.method = method
        self.ledger = Ledger(n_params=n_params, budget_flops=opts.budget_flops)
        self.engine_cfg = opts.engine_config()
        self.stage_seconds: dict[str, float] = {}
        self.counts: dict[str, dict[str, int]] = {}  # per stage: items truncated, dropped, ...
        self._policy: Policy | None = None  # the policy the run holds in memory
        self._tokenizer: PreTrainedTokenizerBase | None = None
        self._gen: Generator | None = None
        self._gen_policy: Policy | None = None
        self.hooks: list[Hook] = []  # registered once by the run (run/train.py)
        self.meters: list[Meter] = []  # told of every charge of every stage's scope

    @property
    def reference(self) -> str:
        """The reference policy, ``--model`` as resolved (a saved dir or a hub id)."""
        if self.opts.model is None:
            raise ValueError("RunContext: its options are not resolved (run.resolve_options)")
        return self.opts.model

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        """The reference policy's tokenizer (every policy of the run shares it); asking for it
        changes neither the policy the run holds nor what the generator serves."""
        if self._tokenizer is None:
            held = self._policy
            self._tokenizer = (held.tokenizer if held is not None and held.path == self.reference
                               else Policy(self.reference).tokenizer)
        return self._tokenizer

    def policy(self, path: str | Path) -> Policy:
        """The policy saved at ``path``: the handle the run holds when it is that one (its
        model already in memory, e.g. the actor just trained), else a new handle (which loads
        on first use) that the run holds from now on."""
        if self._policy is None or self._policy.path != str(path):
            if self._policy is not None and self._policy is not self._gen_policy:
                self._policy.release()  # one policy in memory besides the generator's
            self._policy = Policy(path)
        return self._policy

    def adopt(self, policy: Policy) -> Policy:
        """Hold ``policy`` as the run's (the next ``policy(path)`` of its path returns it)."""
        if self._policy is not None and self._policy is not policy:
            self._policy.release()
        self._policy = policy
        return policy

    def save_trained(self, policy: Policy, out_dir: str | Path) -> Policy:
        """Save ``policy`` (its model trained in place) to ``out_dir`` and hold the new handle,
        so the next stage that names ``out_dir`` gets the model without reading it. With a
        DeepSpeed engine (which owns its module) the model is let go; the next stage reads
        the saved dir."""
        return self.adopt(policy.save(out_dir, keep=self.engine_cfg.name == "torch"))

    def sampled(self, event: Sampled) -> None:
        """Tell every hook of the run of a sampling pass (module docstring: Hooks)."""
        for hook in self.hooks:
            hook(self, event)

    def scope(self, stage: str, progress: Callable[..., None] | None = None) -> Scope:
        """What ``stage``'s trainers and sampling passes are charged to and report through:
        the run's ledger under ``stage``, the stage's progress bar (``advance`` of
        :meth:`progress`, if any) and the run's meters (module docstring: Scope)."""
        return Scope(stage, self.ledger, progress, tuple(self.meters))

    def count(self, stage: str, counts: dict[str, int]) -> None:
        """Add to a stage's counts (kept in its marker and reported in results.json)."""
        mine = self.counts.setdefault(stage, {})
        for k, v in counts.items():
            mine[k] = mine.get(k, 0) + int(v)

    # ------------------------------------------------------------------ progress
    @staticmethod
    def log(msg: str) -> None:
        """A plain log line on stderr (shown with --quiet too); rank 0's only."""
        if not dist.is_main():
            return
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    def progress(self, name: str, total: int, unit: str = "items") -> _Bar:
        """A progress bar (rich on a TTY, plain lines otherwise): ``with ... as advance:``."""
        return _Bar(name, total, unit, self.opts.quiet or not dist.is_main())

    # ------------------------------------------------------------------ stages
    def path(self, *parts: str) -> Path:
        p = self.run_dir.joinpath(*parts)
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def stage_done(self, name: str) -> bool:
        return (self.run_dir / "stages" / f"{name}.json").is_file()

    def run_stage(self, name: str, fn: Callable[[], dict | None], *,
                  every_rank: bool = False, key: dict | None = None,
                  record: bool = True) -> dict:
        """Run ``fn`` once: skipped (its saved info returned) when its marker exists (and, with
        ``key``, records the same key: e.g. the eval options an eval stage ran with).

        The stage's ledger counts are reset before ``fn`` runs (a rerun recounts everything it
        reports) and saved in the marker with the wall time. With several ranks: ``every_rank``
        stages run on all ranks (each doing its share), the others on rank 0 only while the
        rest wait (then read the marker); rank 0 decides whether the marker exists and writes it.
        The numbers of the stage's info go to the run's ``--report-to`` as
        ``stage/<name>/...`` (``telemetry.stage_record``) unless ``record`` is False.
        """
        info = self._stage(name, fn, every_rank=every_rank, key=key)
        if record:
            telemetry.stage_record(name, info)
        return info

    def _stage(self, name: str, fn: Callable[[], dict | None], *,
               every_rank: bool = False, key: dict | None = None) -> dict:
        """:meth:`run_stage` but the record."""
        marker = self.run_dir / "stages" / f"{name}.json"
        several = dist.world_size() > 1
        done = marker.is_file() and (key is None or read_json(marker).get("key") == key)
        done = dist.broadcast(done) if several else done
        if done:
            return self._skip(name, marker, "done before, skipped")
        if several and not every_rank:
            if dist.is_main():
                with dist.solo():
                    info = self._run(name, fn, marker, key)
            dist.barrier()
            return info if dist.is_main() else self._skip(name, marker, "run by rank 0")
        info = self._run(name, fn, marker, key)
        dist.barrier()
        return info

    def _skip(self, name: str, marker: Path, why: str) -> dict:
        m = read_json(marker)
        if any(m["ledger"].values()):
            self.ledger.stages[name] = StageCount(**m["ledger"])
        if m.get("counts"):
            self.counts[name] = m["counts"]
        self.stage_seconds[name] = m["seconds"]
        telemetry.resume(m)
        self.log(f"stage {name}: {why}")
        return m["info"]

    def _run(self, name: str, fn: Callable[[], dict | None], marker: Path,
             key: dict | None = None) -> dict:
        self.ledger.stages[name] = StageCount()
        self.counts.pop(name, None)
        self.log(f"stage {name}: start")
        # seconds spent by earlier, interrupted attempts (a resumed stage reports its total)
        partial = marker.with_name(f"{name}.partial.json")
        before = float(read_json(partial)["seconds"]) if partial.is_file() else 0.0
        t0 = time.perf_counter()
        ckpt_dir = marker.with_name(f"{name}.ckpt")
        try:
            with checkpoint.stage_scope(ckpt_dir, self.opts.checkpoint_every):
                info = fn() or {}
        except BaseException:
            if dist.is_main():
                atomic_write_json(partial, {"seconds": before + time.perf_counter() - t0})
            raise
        secs = before + time.perf_counter() - t0
        self.stage_seconds[name] = secs
        count = self.ledger.stages.get(name, StageCount())
        if not (count.n_inf or count.n_train):  # eval and bookkeeping stages cost nothing
            self.ledger.stages.pop(name, None)
        if dist.is_main():
            atomic_write_json(marker, {"info": info, "seconds": secs,
                                       "ledger": {k: v for k, v in
                                                  dataclasses.asdict(count).items()
                                                  if v is not None},
                                       "counts": self.counts.get(name, {}),
                                       **telemetry.position(),
                                       **({"key": key} if key is not None else {})})
            partial.unlink(missing_ok=True)
            checkpoint.remove(ckpt_dir)  # the marker supersedes the stage's checkpoints
        self.log(f"stage {name}: {secs:.1f}s, {_flops_note(info, self.ledger.stage_flops(name))}")
        return info

    # ------------------------------------------------------------------ models
    def generator(self, policy: Policy | str) -> Generator:
        """The generator serving ``policy`` (a handle, or the path of one: ``self.policy``);
        one instance, whose weights are swapped when another handle is asked for (a handle
        whose model was trained in place has moved to a new one, so it is never served
        stale)."""
        if not isinstance(policy, Policy):
            policy = self.policy(policy)
        if self._gen is None:
            self._gen = new_generator(self.opts, policy)
        elif self._gen_policy is not policy:
            self._gen.serve(policy)
        self._gen_policy = policy
        return self._gen

    def close(self) -> None:
        if self._gen is not None:
            self._gen.close()
            self._gen = None


def new_generator(opts: RunOptions, policy: Policy | str) -> Generator:
    """A fresh generator of the run's backend (``GENERATORS``) for ``policy`` (a handle or a
    saved dir)."""
    from dapo_bench.generation.base import load_generator

    options = {"batch_size": opts.gen_batch_size} if opts.backend == "hf" else {}
    return load_generator(opts.backend, policy, **options)


def _flops_note(info: dict, run_flops: float) -> str:
    """What a stage spent, for its log line. A stage with its own ledger (the equal-compute
    control, kept out of the method's) reports its spend as ``info["flops"]``; the run's ledger
    shows 0 for it, which the log used to print as "0 FLOPs"."""
    own = info.get("flops")
    if isinstance(own, (int, float)) and not run_flops:
        return f"{own:.3g} FLOPs (own ledger, not the run's)"
    return f"{run_flops:.3g} FLOPs" if run_flops else "0 FLOPs charged"


def step_counter(advance: Callable[..., None], per_log: int = 1) -> Callable[[int], None]:
    """``report(steps)`` moves a training bar to a loop's step count; steps beyond the
    ``per_log`` made since the last report were restored from a checkpoint: counted as done,
    not as made (they stay out of the rate)."""
    seen = [0]

    def report(steps: int) -> None:
        gap = steps - seen[0]
        new = min(gap, per_log)
        if gap > new:
            advance(gap - new, resumed=True)
        if new:
            advance(new)
        seen[0] = steps

    return report


class _Bar:
    def __init__(self, name: str, total: int, unit: str, quiet: bool):
        from dapo_bench.eval.progress import Progress

        self._p = Progress(quiet=quiet)
        self._bar = self._p.start(name, total=total, done=0, unit=unit)

    def __enter__(self) -> Callable[..., None]:  # advance(k, resumed=False)
        return lambda k, resumed=False: self._p.advance(self._bar, k, resumed)

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self._p.finish(self._bar)
        self._p.close()
