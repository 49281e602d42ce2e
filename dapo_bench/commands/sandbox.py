"""``dapo-bench sandbox check``: which containment layers of the code sandbox are active.

The layers are probed from inside a confined child, as a program would run (see
``dapo_bench.verifiers.code.probe``). Exit status 0 when network and write isolation both hold
(the sandbox will grade), 1 otherwise (every code verdict would be ``sandbox_error``). Its flags
are the fields of :class:`SandboxCheckOptions`, each declared once with its help.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

import typer

from dapo_bench.commands.common import examples, options_of, with_options
from dapo_bench.config import option

EXAMPLES = examples("""
    dapo-bench sandbox check                          # a table of the layers; exit 0 = isolated
    dapo-bench sandbox check --json
""")


@dataclass(frozen=True)
class SandboxCheckOptions:
    """``dapo-bench sandbox check``'s flags, each declared once, here, with its help: a flag
    (:func:`register` makes them from the fields) and a row of docs/code-sandbox.md's options
    table (``config.options_table``; tests/commands/test_command_options.py keeps the two
    equal)."""

    as_json: bool = option(False, "print JSON instead of a table", flag="--json")


def register(app: typer.Typer, option_cls: type = SandboxCheckOptions) -> None:
    """Add ``sandbox check`` to *app*, its flags made from *option_cls*' fields
    (``SandboxCheckOptions``; the tests pass a subclass with a field added)."""
    sandbox = typer.Typer(help="The code sandbox: check its containment layers.",
                          no_args_is_help=True, rich_markup_mode=None, epilog=EXAMPLES)
    app.add_typer(sandbox, name="sandbox")

    def check_cmd(**values: Any) -> None:
        """Print which sandbox layers are active on this machine, and why."""
        as_json = options_of(option_cls, values).as_json
        from rich.console import Console
        from rich.table import Table

        from dapo_bench.verifiers.code import check_layers
        from dapo_bench.verifiers.code.probe import isolated

        layers = check_layers()
        ok, why = isolated(layers)
        if as_json:
            out = {k: {"active": a, "detail": d} for k, (a, d) in layers.items()}
            sys.stdout.write(json.dumps({"layers": out, "isolated": ok, "why": why}) + "\n")
        else:
            table = Table(title="code sandbox layers", title_justify="left")
            table.add_column("layer")
            table.add_column("active")
            table.add_column("detail")
            for name, (active, detail) in layers.items():
                table.add_row(name, "[green]yes[/green]" if active else "[red]no[/red]", detail)
            console = Console()
            console.print(table)
            verdict = "[green]isolated[/green]" if ok else "[red]NOT isolated[/red]"
            console.print(f"{verdict}: {why}")
        raise typer.Exit(0 if ok else 1)

    sandbox.command("check", epilog=EXAMPLES)(with_options(check_cmd, option_cls))
