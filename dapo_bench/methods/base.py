"""The method interface: ``register_method`` puts a method in ``METHODS``.

A method is a function ``fn(ctx: RunContext, cfg) -> MethodOutput`` plus a frozen config
dataclass (its docstring is the user reference), named presets (``default`` = paper settings;
``toy`` = tuned for the embedded arith task's shipped policy), the command-line flags it takes
besides ``--set`` and, optionally, ``summary(results) -> lines`` (what ``dapo-bench train``
prints after the table, e.g. DAPO's critic skill). A method holds its algorithm and its stages;
the run around it (options, run dir, evaluation, control, results) is ``dapo_bench.run``.

Not covered: methods that run outside a ``RunContext``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dapo_bench.errors import UserError
from dapo_bench.methods import METHODS

if TYPE_CHECKING:  # for the checker only: the registrations import no torch
    from dapo_bench.methods.context import RunContext
    from dapo_bench.models import Policy
    from dapo_bench.training.loop import LoopStats


@dataclass(frozen=True)
class MethodSpec:
    name: str
    fn: Callable[[RunContext, Any], MethodOutput]
    config_cls: type
    presets: dict[str, dict]
    flags: dict[str, str] = field(default_factory=dict)  # CLI flag name -> config field
    # lines `dapo-bench train` prints about a finished run's results.json (method-specific)
    summary: Callable[[dict], list[str]] | None = None


@dataclass
class MethodOutput:
    """What a method returns: the final policy dir and what to report."""

    model_dir: str
    history: list[dict] = field(default_factory=list)
    iterations: list[dict] = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # e.g. {"critic": {...}}


def register_method(name: str, *, config: type, presets: dict[str, dict], help: str,
                    flags: dict[str, str] | None = None,
                    summary: Callable[[dict], list[str]] | None = None) -> Callable:
    """Decorator: register ``fn(ctx, cfg) -> MethodOutput`` as training method ``name``."""
    if "default" not in presets:
        raise ValueError(f"method {name}: presets need a 'default' entry")

    def deco(fn: Callable) -> Callable:
        METHODS.add(name, MethodSpec(name, fn, config, presets, dict(flags or {}), summary),
                    help=help)
        return fn

    return deco


def flag_overrides(method: str, flags: dict[str, object]) -> list[str]:
    """``--set`` overrides for the method-specific flags given (None = not given); a flag of
    another method is a UserError naming the methods that take it."""
    spec: MethodSpec = METHODS.get(method)
    out = []
    for flag, value in flags.items():
        if value is None:
            continue
        if flag not in spec.flags:
            takers = [e.name for e in METHODS if flag in e.obj.flags]
            cli = "--" + flag.replace("_", "-")
            raise UserError(f"{cli} is not a {method} option (methods that take it: "
                            f"{', '.join(takers) or 'none'}); use --set FIELD=VALUE")
        out.append(f"{spec.flags[flag]}={value}")
    return out


def train_stage(ctx: RunContext, work: Callable[[], dict], out_dir: Path) -> MethodOutput:
    """Run ``work`` as the resumable stage ``train`` (on every rank); it saves the policy to
    ``out_dir`` and returns info with a ``history`` list (kept in the stage marker, so a
    resumed run has it)."""
    info = ctx.run_stage("train", work, every_rank=True)
    return MethodOutput(str(out_dir), history=info.get("history", []),
                        extra={"train_info": {k: v for k, v in info.items() if k != "history"}})


def train_on_pairs(ctx: RunContext, sampled: int, pairs: Callable[[], list],
                   train: Callable[[Policy, list], LoopStats], none: str) -> MethodOutput:
    """An offline method's ``train`` stage (RFT, DPO): ``train(policy, pairs())`` (the loop's
    stats) on the reference policy in place, its counts kept, the policy saved to ``policy/``;
    with no pair the policy is saved unchanged and ``none`` logged. ``sampled``: the problems
    its rollouts stage sampled (reported)."""
    out_dir = ctx.run_dir / "policy"

    def work() -> dict:
        data = pairs()
        policy = ctx.policy(ctx.reference)
        history: list[dict] = []
        how = {"steps": 0, "epochs": 0.0, "stopped": "no data"}
        if data:
            stats = train(policy, data)
            history = stats.history
            how = {"steps": stats.steps, "epochs": round(stats.epochs, 3),
                   "stopped": stats.stopped or "epochs"}
            ctx.count("train", stats.counts)
        else:
            ctx.log(none)
        ctx.save_trained(policy, out_dir)
        return {"problems_sampled": sampled, "pairs": len(data), **how, "history": history}

    return train_stage(ctx, work, out_dir)
