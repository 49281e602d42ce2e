"""``dapo-bench list``: what is registered at every plug-point."""

from __future__ import annotations

import importlib

import typer

# (title, module, attribute) of each registry; a missing module is shown as such.
REGISTRIES = (
    ("verifiers", "dapo_bench.verifiers.base", "VERIFIERS"),
    ("generator backends", "dapo_bench.generation.base", "GENERATORS"),
    ("training methods", "dapo_bench.methods", "METHODS"),
    ("DAPO advantage estimators", "dapo_bench.training.dapo_loss", "VALUE_ESTIMATORS"),
    ("tasks", "dapo_bench.tasks", "TASKS"),
    ("suites", "dapo_bench.tasks", "SUITES"),
)


def register(app: typer.Typer) -> None:
    @app.command("list")
    def list_cmd() -> None:
        """Show registered verifiers, generator backends, methods, tasks and suites."""
        from rich.console import Console
        from rich.table import Table

        console = Console()
        for title, mod, attr in REGISTRIES:
            table = Table(title=title, title_justify="left", show_header=False, box=None)
            try:
                reg = getattr(importlib.import_module(mod), attr)
                for entry in reg:
                    table.add_row(f"[bold]{entry.name}[/bold]", entry.help)
            except ModuleNotFoundError as e:
                table.add_row("[dim](not available)[/dim]", str(e))
            console.print(table)
            console.print()
