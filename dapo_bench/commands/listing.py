"""``dapo-bench list``: what is registered at every plug-point."""

from __future__ import annotations

import importlib

import typer

from dapo_bench.commands.common import examples

EXAMPLES = examples("""
    dapo-bench list                                   # every plug-point and what is registered
    dapo-bench list | grep -A8 'tasks (TASKS)'
""")
# (module, attribute) of every registry of the project (a test checks that none is missing);
# each is shown under its plug-point's name (``Registry.kind``).
REGISTRIES = (
    ("dapo_bench.verifiers.base", "VERIFIERS"),
    ("dapo_bench.tasks", "TASKS"),
    ("dapo_bench.tasks", "SUITES"),
    ("dapo_bench.tasks.golds", "GOLD_TRANSFORMS"),
    ("dapo_bench.generation.base", "GENERATORS"),
    ("dapo_bench.methods", "METHODS"),
    ("dapo_bench.training.engine", "ENGINES"),
    ("dapo_bench.methods.dapo.advantages", "VALUE_ESTIMATORS"),
    ("dapo_bench.training.policy_gradient", "ADVANTAGE_ESTIMATORS"),
    ("dapo_bench.training.policy_gradient", "KL_ESTIMATORS"),
    ("dapo_bench.training.policy_gradient", "LOSS_AGGREGATIONS"),
    ("dapo_bench.leaderboard.render", "RENDERERS"),
    ("dapo_bench.leaderboard.plots", "PLOTS"),
)


def register(app: typer.Typer) -> None:
    @app.command("list", epilog=EXAMPLES)
    def list_cmd() -> None:
        """Show what is registered at every plug-point (verifiers, tasks, backends, methods, ...)."""
        from rich.console import Console
        from rich.table import Table

        console = Console()
        for mod, attr in REGISTRIES:
            try:
                reg = getattr(importlib.import_module(mod), attr)
            except ModuleNotFoundError as e:
                console.print(f"{attr}: [dim](not available: {e})[/dim]\n")
                continue
            table = Table(title=f"{reg.kind}s ({attr})", title_justify="left",
                          show_header=False, box=None)
            for entry in reg:
                table.add_row(f"[bold]{entry.name}[/bold]", entry.help)
            console.print(table)
            console.print()
