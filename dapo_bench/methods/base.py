"""The method interface and the shared training run: ``run_training(method, ...)``.

A method is registered in ``METHODS`` with :func:`register_method`: a function
``fn(ctx: RunContext, cfg) -> MethodOutput`` plus a frozen config dataclass (its docstring is the
user reference) and named presets (``default`` = paper settings, ``toy`` = the embedded arith
default; more may be added). ``run_training``:

1. resolves options and config (preset -> YAML -> ``key=value`` overrides) and makes
   ``runs/<run-id>/`` with ``config.json`` (refusing to resume a run dir with another config);
2. runs the method, whose stages go through ``ctx.run_stage`` (skipped when their marker
   ``stages/<name>.json`` exists: it stores the stage's ledger counts and wall time, so an
   interrupted run resumes where it stopped and still reports the full ledger);
3. evaluates the reference and the final policy greedily on the eval tasks (``eval_policy``,
   cached per policy), and with ``control`` trains and evaluates an equal-compute control (the
   reference given the same FLOPs of plain SFT on gold solutions, see ``control.py``);
4. writes ``results.json`` (schema in ``dapo_bench.results``) with the method, the ledger (per
   stage and total FLOPs), the resolved config, the method's history and iterations, per-stage
   wall times, and paired-bootstrap comparisons against the reference and the control.

Several ranks (``torchrun`` / ``deepspeed`` launcher, WORLD_SIZE > 1, needs ``--deepspeed``):
rank 0 alone runs every stage except training ones (generation, verification, evaluation, all
artifacts, stage markers, ``results.json``), inside ``dist.solo()``; the other ranks wait at a
barrier and then read its stage marker, as a resumed run does. Stages registered with
``trains=True`` run on every rank (each trainer decides how the batch is split, see
``dapo_bench.training.dist``); only rank 0 writes. The run dir must be visible to every rank
(one node, or a shared filesystem).

Not covered: resuming in the middle of a non-append-only stage (such a stage reruns from its
start); online methods (GRPO, PPO) on several ranks.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dapo_bench.config import load_config, to_dict
from dapo_bench.errors import UserError
from dapo_bench.io import atomic_write_json, read_json
from dapo_bench.ledger import Ledger, StageCount
from dapo_bench.methods import METHODS
from dapo_bench.training import dist


@dataclass(frozen=True)
class RunOptions:
    """Options every method shares (the ``dapo-bench train`` flags).

    model: reference policy (dir or hub id; default for arith: the shipped toy policy);
    task: training task ``name`` or ``name:split`` (arith -> split rl_train); eval_tasks: tasks
    the result is evaluated on (default: arith -> arith, arith_ood; other -> the task itself);
    eval_limit: first N problems of each eval task; eval_max_new_tokens: greedy eval cap (0 =
    the task's); backend: generator backend (hf | vllm); gen_batch_size: rows per generation
    batch; deepspeed: none | zero0..zero3; budget_flops: stop training when the ledger reaches
    it; control: also train/evaluate the equal-compute SFT control; control_lr /
    control_batch_size: its SFT settings; seed; out: parent dir of run dirs; run_id: run dir
    name (default: time-method-task); data_dir: benchmark files for file-backed tasks.
    """

    model: str | None = None
    task: str = "arith"
    eval_tasks: tuple[str, ...] = ()
    eval_limit: int | None = None
    eval_max_new_tokens: int = 0
    backend: str = "hf"
    gen_batch_size: int = 256
    deepspeed: str = "none"
    budget_flops: float | None = None
    control: bool = True
    control_lr: float = 1e-4
    control_batch_size: int = 64
    seed: int = 0
    out: str = "runs"
    run_id: str | None = None
    data_dir: str | None = None
    quiet: bool = False


@dataclass(frozen=True)
class MethodSpec:
    name: str
    fn: Callable[[RunContext, Any], MethodOutput]
    config_cls: type
    presets: dict[str, dict]
    default_preset: Callable[[RunOptions], str] = lambda opts: "default"


@dataclass
class MethodOutput:
    """What a method returns: the final policy dir and what to report."""

    model_dir: str
    history: list[dict] = field(default_factory=list)
    iterations: list[dict] = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # e.g. {"critic": {...}}


def register_method(
    name: str, *, config: type, presets: dict[str, dict], help: str,
    default_preset: Callable[[RunOptions], str] | None = None,
) -> Callable:
    """Decorator: register ``fn(ctx, cfg) -> MethodOutput`` as training method ``name``."""
    if "default" not in presets:
        raise ValueError(f"method {name}: presets need a 'default' entry")

    def deco(fn: Callable) -> Callable:
        spec = MethodSpec(name, fn, config, presets,
                          default_preset or (lambda opts: "default"))
        METHODS.add(name, spec, help=help)
        return fn

    return deco


def resolve_config(spec: MethodSpec, opts: RunOptions, preset: str | None,
                   yaml_path: str | None, overrides: list[str]) -> tuple[str, Any]:
    preset = preset or spec.default_preset(opts)
    if preset not in spec.presets:
        raise UserError(f"method {spec.name}: unknown preset {preset!r} "
                        f"(presets: {', '.join(sorted(spec.presets))})")
    return preset, load_config(spec.config_cls, yaml_path, overrides, base=spec.presets[preset])


class RunContext:
    """What a method sees: run dir, options, ledger, stages, progress, models and data."""

    def __init__(self, run_dir: Path, opts: RunOptions, n_params: int, method: str):
        self.run_dir = run_dir
        self.opts = opts
        self.method = method
        self.ledger = Ledger(n_params=n_params, budget_flops=opts.budget_flops)
        self.stage_seconds: dict[str, float] = {}
        self._gen: Any = None
        self._gen_model: str | None = None

    # ------------------------------------------------------------------ progress
    @staticmethod
    def log(msg: str) -> None:
        """A plain log line on stderr (shown with --quiet too); rank 0's only."""
        if not dist.is_main():
            return
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    def progress(self, name: str, total: int) -> _Bar:
        """A progress bar (rich on a TTY, plain lines otherwise): ``with ... as advance:``."""
        return _Bar(name, total, self.opts.quiet or not dist.is_main())

    # ------------------------------------------------------------------ stages
    def path(self, *parts: str) -> Path:
        p = self.run_dir.joinpath(*parts)
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def stage_done(self, name: str) -> bool:
        return (self.run_dir / "stages" / f"{name}.json").is_file()

    def run_stage(self, name: str, fn: Callable[[], dict | None], *, trains: bool = False) -> dict:
        """Run ``fn`` once: skipped (its saved info returned) when its marker exists.

        The stage's ledger counts are reset before ``fn`` runs (a rerun recounts everything it
        reports) and saved in the marker with the wall time. With several ranks: ``trains``
        stages run on every rank, the others on rank 0 only while the rest wait (then read the
        marker); rank 0 decides whether the marker exists and writes it.
        """
        marker = self.run_dir / "stages" / f"{name}.json"
        several = dist.world_size() > 1
        done = dist.broadcast(marker.is_file()) if several else marker.is_file()
        if done:
            return self._skip(name, marker, "done before, skipped")
        if several and not trains:
            if dist.is_main():
                with dist.solo():
                    info = self._run(name, fn, marker)
            dist.barrier()
            return info if dist.is_main() else self._skip(name, marker, "run by rank 0")
        info = self._run(name, fn, marker)
        dist.barrier()
        return info

    def _skip(self, name: str, marker: Path, why: str) -> dict:
        m = read_json(marker)
        if any(m["ledger"].values()):
            self.ledger.stages[name] = StageCount(**m["ledger"])
        self.stage_seconds[name] = m["seconds"]
        self.log(f"stage {name}: {why}")
        return m["info"]

    def _run(self, name: str, fn: Callable[[], dict | None], marker: Path) -> dict:
        self.ledger.stages[name] = StageCount()
        self.log(f"stage {name}: start")
        t0 = time.perf_counter()
        info = fn() or {}
        secs = time.perf_counter() - t0
        self.stage_seconds[name] = secs
        count = self.ledger.stages.get(name, StageCount())
        if not (count.n_inf or count.n_train):  # eval and bookkeeping stages cost nothing
            self.ledger.stages.pop(name, None)
        if dist.is_main():
            atomic_write_json(marker, {"info": info, "seconds": secs,
                                       "ledger": dataclasses.asdict(count)})
        self.log(f"stage {name}: {secs:.1f}s, {self.ledger.stage_flops(name):.3g} FLOPs")
        return info

    # ------------------------------------------------------------------ models
    def generator(self, model_dir: str) -> Any:
        """The generator serving ``model_dir`` (one instance; weights swapped on change)."""
        from dapo_bench.generation.base import load_generator

        if self._gen is None:
            if self.opts.backend == "hf":  # direct: needs no other backend module importable
                from dapo_bench.generation.hf import HFGenerator

                self._gen = HFGenerator(model_dir, batch_size=self.opts.gen_batch_size)
            else:
                self._gen = load_generator(self.opts.backend, model_dir)
        elif self._gen_model != model_dir:
            self._gen.update_weights(model_dir)
        self._gen_model = model_dir
        return self._gen

    def optim_base(self):
        from dapo_bench.training.common import OptimConfig

        return OptimConfig(deepspeed=self.opts.deepspeed)

    def close(self) -> None:
        if self._gen is not None:
            self._gen.close()
            self._gen = None


class _Bar:
    def __init__(self, name: str, total: int, quiet: bool):
        from dapo_bench.eval.progress import Progress

        self._p = Progress(quiet=quiet)
        self._bar = self._p.start(name, total=total, done=0)

    def __enter__(self) -> Callable[[int], None]:
        return lambda k: self._p.advance(self._bar, k)

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self._p.finish(self._bar)
        self._p.close()


def default_eval_tasks(task: str) -> tuple[str, ...]:
    name = task.split(":")[0]
    return ("arith", "arith_ood") if name == "arith" else (name,)


def make_run_id(method: str, task: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{method}-{task.replace(':', '-')}"


def resolve_model(opts: RunOptions) -> str:
    if opts.model:
        return opts.model
    if opts.task.split(":")[0] != "arith":
        raise UserError("--model is required for tasks other than arith")
    from dapo_bench.toy import default_model_path

    return str(default_model_path())


def run_training(
    method: str,
    opts: RunOptions = RunOptions(),
    *,
    preset: str | None = None,
    config_yaml: str | None = None,
    overrides: list[str] | tuple[str, ...] = (),
) -> dict:
    """Train with ``method``, evaluate, write ``results.json``; returns the results dict."""
    from dapo_bench.methods.report import build_results

    spec: MethodSpec = METHODS.get(method)
    preset, cfg = resolve_config(spec, opts, preset, config_yaml, list(overrides))
    dist.check_engine(opts.deepspeed)
    model = resolve_model(opts)
    opts = dataclasses.replace(
        opts, model=model, eval_tasks=opts.eval_tasks or default_eval_tasks(opts.task),
        run_id=opts.run_id or dist.broadcast(make_run_id(method, opts.task)),
    )
    run_dir = Path(opts.out) / opts.run_id
    saved = {"method": method, "preset": preset, "options": to_dict(opts), "config": to_dict(cfg)}
    cfg_path = run_dir / "config.json"
    if dist.is_main():
        if cfg_path.is_file():
            old = read_json(cfg_path)
            if old != _jsonable(saved):
                raise UserError(f"{cfg_path}: this run dir holds a run with another config; "
                                f"pass another --run-id or remove the directory")
        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(cfg_path, saved)
    dist.barrier()

    from dapo_bench.training.common import count_params, load_policy

    t0 = time.perf_counter()
    ref_model, _ = load_policy(model)
    ctx = RunContext(run_dir, opts, count_params(ref_model), method)
    del ref_model
    ctx.log(f"run dir {run_dir} (method {method}, preset {preset})")
    try:
        out = spec.fn(ctx, cfg)
        results = build_results(ctx, spec, cfg, saved, out, t0)
    finally:
        ctx.close()
    return results


def _jsonable(obj: Any) -> Any:
    import json

    return json.loads(json.dumps(obj))
