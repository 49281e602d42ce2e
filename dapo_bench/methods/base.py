"""The method interface: ``register_method`` puts a method in ``METHODS``.

A method is a function ``fn(ctx: RunContext, cfg) -> MethodOutput`` plus a frozen config
dataclass (its docstring is the user reference), named presets (``default`` = paper settings;
``toy`` = tuned for the embedded arith task's shipped policy), the config fields that are
command-line flags of their own besides ``--set`` (``flags``: each declared once, on the config,
with ``config.option``; :func:`method_flags` makes ``train``'s flags and the docs table from
them) and, optionally, ``summary(results) -> lines`` (what ``dapo-bench train`` prints after
the table, e.g. DAPO's critic skill). A method holds its algorithm and its stages; the run
around it (options, run dir, evaluation, control, results) is ``dapo_bench.run``.

Not covered: methods that run outside a ``RunContext``.
"""

from __future__ import annotations

import dataclasses
import importlib
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dapo_bench.config import flag, option
from dapo_bench.errors import UserError
from dapo_bench.methods import FLAG_MODULES, METHODS

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
    # config fields that are command-line flags (--beta: a shorthand for --set beta=...)
    flags: tuple[str, ...] = ()
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
                    flags: tuple[str, ...] = (),
                    summary: Callable[[dict], list[str]] | None = None) -> Callable:
    """Decorator: register ``fn(ctx, cfg) -> MethodOutput`` as training method ``name``;
    ``flags``: top-level fields of ``config``, each declared with ``config.option`` (its help),
    that ``dapo-bench train`` takes as flags of their own."""
    if "default" not in presets:
        raise ValueError(f"method {name}: presets need a 'default' entry")
    helped = {f.name for f in dataclasses.fields(config) if f.metadata.get("help")}
    for f in flags:
        if f not in helped:
            raise ValueError(f"method {name}: flag {f!r} is not a field of {config.__name__} "
                             f"declared with config.option (a default and its help)")

    def deco(fn: Callable) -> Callable:
        METHODS.add(name, MethodSpec(name, fn, config, presets, tuple(flags), summary),
                    help=help)
        return fn

    return deco


def method_flags() -> type:
    """``dapo-bench train``'s method flags, for ``commands.common.with_options`` and
    ``config.options_table``: a frozen dataclass with a field per config field that a registered
    method names in its ``flags``, of that field's type or None (default None: not given), its
    help led by the methods that take it (``dapo only: ...``). Reads the registrations of
    ``FLAG_MODULES`` (no torch) and of any method registered already; loads no other method."""
    for module in FLAG_MODULES:
        importlib.import_module(module)
    takers: dict[str, list[MethodSpec]] = {}
    for e in METHODS.registered():
        for name in e.obj.flags:
            takers.setdefault(name, []).append(e.obj)
    fields = []
    for name, specs in takers.items():
        types = {typing.get_type_hints(s.config_cls)[name] for s in specs}
        if len(types) > 1:
            raise ValueError(f"flag {flag(name)}: the methods that take it differ in its type")
        decl = next(f for f in dataclasses.fields(specs[0].config_cls) if f.name == name)
        text = f"{', '.join(s.name for s in specs)} only: {decl.metadata['help']}"
        fields.append((name, types.pop() | None,
                       option(None, text, metavar=decl.metadata.get("metavar"))))
    return dataclasses.make_dataclass("MethodFlags", fields, frozen=True)


def flag_overrides(method: str, flags: dict[str, object]) -> list[str]:
    """``--set`` overrides for the method flags given (field name -> value; None = not given),
    put after the user's ``--set``; a flag of another method is a UserError naming the methods
    that take it."""
    spec: MethodSpec = METHODS.get(method)
    out = []
    for name, value in flags.items():
        if value is None:
            continue
        if name not in spec.flags:
            takers = [e.name for e in METHODS if name in e.obj.flags]
            raise UserError(f"{flag(name)} is not a {method} option (methods that take it: "
                            f"{', '.join(takers) or 'none'}); use --set FIELD=VALUE")
        out.append(f"{name}={value}")
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
