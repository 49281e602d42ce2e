"""``dapo-bench audit RUN_DIR``: is every state and action a DAPO run scored the model's own
token ids? Prints the share per iteration and the run's truncation counts; exit status 1 unless
every scored item is exact (see ``dapo_bench.methods.dapo.audit``). Its flags are the fields of
:class:`AuditOptions`, each declared once with its help."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from dapo_bench.commands.common import examples, options_of, with_options
from dapo_bench.config import option

EXAMPLES = examples("""
    dapo-bench audit runs/RUN_ID                       # a table; exit 1 unless all exact
    dapo-bench audit runs/RUN_ID --json --no-reencode
""")


@dataclass(frozen=True)
class AuditOptions:
    """``dapo-bench audit``'s flags (``RUN_DIR`` is its argument), each declared once, here,
    with its help: a flag (:func:`register` makes them from the fields) and a row of
    docs/training.md's audit options table (``config.options_table``;
    tests/commands/test_command_options.py keeps the two equal)."""

    as_json: bool = option(False, "print JSON, not a table", flag="--json")
    reencode: bool = option(
        True, "also count actions that re-encoding their text would change (loads the run's "
        "tokenizer)")


def register(app: typer.Typer, option_cls: type = AuditOptions) -> None:
    """Add ``audit`` to *app*, its flags made from *option_cls*' fields (``AuditOptions``; the
    tests pass a subclass with a field added)."""

    def audit_cmd(
        run_dir: Annotated[Path, typer.Argument(
            metavar="RUN_DIR", help="a DAPO run directory (runs/<id>)")],
        **values: Any,
    ) -> None:
        """Check a DAPO run's artifacts for token exactness and report its truncations."""
        from rich.console import Console
        from rich.table import Table

        from dapo_bench.errors import UserError
        from dapo_bench.io import read_json
        from dapo_bench.methods.dapo.audit import audit_run

        o = options_of(option_cls, values)
        if not run_dir.is_dir():
            raise UserError(f"{run_dir}: no such run directory")
        tok = None
        if o.reencode and (run_dir / "config.json").is_file():
            from dapo_bench.models import load_tokenizer

            tok = load_tokenizer(read_json(run_dir / "config.json")["options"]["model"])
        rep = audit_run(run_dir, tok)
        if o.as_json:
            sys.stdout.write(json.dumps(rep, sort_keys=True) + "\n")
        else:
            t = Table(title=f"token exactness of {run_dir}", title_justify="left")
            for col in ("iteration", "states exact", "actions exact", "re-encoding would differ"):
                t.add_column(col)
            for it, v in rep["iterations"].items():
                t.add_row(it, f"{v['states_exact']}/{v['states']}",
                          f"{v['actions_exact']}/{v['actions']}",
                          "-" if v["reencoded_differs"] is None
                          else f"{v['reencoded_differs']}/{v['actions']}")
            console = Console()
            console.print(t)
            console.print(f"exact: {rep['exact']}/{rep['items']} "
                          f"({100 * rep['exact_share']:.1f}%)")
            for stage, c in sorted(rep["counts"].items()):
                console.print(f"  {stage}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
        raise typer.Exit(0 if rep["exact"] == rep["items"] else 1)

    app.command("audit", epilog=EXAMPLES)(with_options(audit_cmd, option_cls))
