"""``dapo-bench train --method NAME``: train with a registered method, evaluate, write results.

With no argument but ``--method dapo`` it runs DAPO (Liu et al., step-level) with the ``toy``
preset on the embedded ``arith`` task and the shipped reference policy, offline on CPU.
Configuration precedence: preset -> ``--config`` YAML -> ``--set key=value`` -> the method's
named flags (``--beta`` etc. are shorthands for ``--set beta=...``, put after the user's).
No flag but ``--method``, ``--config``, ``--preset`` and ``--set`` is written here: the run
flags every method shares are ``RunOptions`` fields, each declared once with its help
(``methods.options``), and a method's own flags are the config fields its registration names
(``register_method(..., flags=...)``, gathered by ``methods.base.method_flags``);
``commands.common.with_options`` makes the flags from the fields of both.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer
from typer import Option as Opt

from dapo_bench.commands.common import (
    examples,
    options_of,
    quiet_accelerator_probe,
    with_options,
)
from dapo_bench.methods import METHOD_NAMES
from dapo_bench.methods.base import flag_overrides, method_flags
from dapo_bench.methods.options import RunOptions

EXAMPLES = examples("""
    dapo-bench train --method dapo                  # DAPO on the embedded toy, offline, CPU
    dapo-bench train --method dapo --model Qwen/Qwen2.5-Math-7B-Instruct --task math_train
    dapo-bench train --method grpo --backend vllm --eval-serve 'vllm serve {model} --port {port}'
""")


def register(app: typer.Typer, option_cls: type = RunOptions) -> None:
    """Add ``train`` to *app*, its run flags made from *option_cls*' fields (``RunOptions``;
    the tests pass a subclass with a field added), its method flags from the registrations
    (:func:`~dapo_bench.methods.base.method_flags`)."""
    flags_cls = method_flags()

    def train_cmd(
        method: Annotated[str, Opt(
            "--method", help=f"training method: {' | '.join(METHOD_NAMES)} ('dapo' = DAPO of Liu "
            "et al., step-level; 'dapo-bench list' describes each)")],
        config: Annotated[Path | None, Opt("--config", help="YAML method config")] = None,
        preset: Annotated[str | None, Opt(
            help="config preset (default: toy for arith, else default = paper)")] = None,
        set_: Annotated[list[str] | None, Opt(
            "--set", metavar="KEY=VALUE", help="config override (repeat)")] = None,
        **options: Any,
    ) -> None:
        """Train a policy with a registered method (DAPO = Liu et al., step-level, offline)."""
        if method not in METHOD_NAMES:  # before importing torch and the methods (seconds)
            from dapo_bench.errors import UserError

            raise UserError(f"--method {method!r}: unknown (methods: {', '.join(METHOD_NAMES)})")
        from dapo_bench.telemetry import check_report_to

        check_report_to(options["report_to"])  # before importing torch, too
        import torch
        from rich.console import Console

        quiet_accelerator_probe()

        from dapo_bench import run

        given = {f.name: options.pop(f.name) for f in dataclasses.fields(flags_cls)}
        overrides = list(set_ or []) + flag_overrides(method, given)
        opts = options_of(option_cls, options)
        threads = opts.threads
        if threads is None:  # the task's default model says how many threads suit it
            threads = (run.task_spec(opts).threads if opts.model is None else None) or 2
        if not torch.cuda.is_available():
            torch.set_num_threads(max(1, min(threads, torch.get_num_threads())))
        res = run.run_training(method, opts, preset=preset,
                               config_yaml=str(config) if config else None,
                               overrides=overrides)
        from dapo_bench.dist import is_main

        if is_main():  # under torchrun every rank returns; one table is enough
            Console(stderr=True).print(summary_table(res))
            for line in run.summary_lines(res):  # the budget, the method's own summary
                Console(stderr=True).print(line, markup=False)

    app.command("train", epilog=EXAMPLES)(with_options(train_cmd, flags_cls, option_cls))


def summary_table(res: dict):
    """Reference / control / trained accuracy per eval task, with paired-bootstrap gains."""
    from rich.table import Table

    title = ("DAPO (Liu et al., step-level)" if res["method"] == "dapo" else res["method"])
    t = Table(title=f"{title}: {res['run_id']} ({res['ledger']['flops']:.3g} training FLOPs)")
    for col in ("task", "reference", "control", "trained", "gain vs ref", "gain vs control"):
        t.add_column(col)
    evals, comp = res["evals"], res["comparison"]

    def acc(label: str, task: str) -> str:
        m = evals.get(label, {}).get(task)
        return "-" if m is None else f"{100 * m['value']:.1f} ± {100 * (m['stderr'] or 0):.1f}"

    def gain(key: str, task: str) -> str:
        c = comp.get(key, {}).get(task)
        return "-" if c is None else f"{100 * c['diff']:+.1f} ± {100 * c['stderr']:.1f}"

    for task in evals["final"]:
        t.add_row(task, acc("reference", task), acc("control", task), acc("final", task),
                  gain("final_vs_reference", task), gain("final_vs_control", task))
    return t
