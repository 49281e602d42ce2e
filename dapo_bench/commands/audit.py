"""``dapo-bench audit RUN_DIR``: is every state and action a DAPO run scored the model's own
token ids? Prints the share per iteration and the run's truncation counts; exit status 1 unless
every scored item is exact (see ``dapo_bench.methods.dapo.audit``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from dapo_bench.commands.common import examples

EXAMPLES = examples("""
    dapo-bench audit runs/RUN_ID                       # a table; exit 1 unless all exact
    dapo-bench audit runs/RUN_ID --json --no-reencode
""")

def register(app: typer.Typer) -> None:
    @app.command("audit", epilog=EXAMPLES)
    def audit_cmd(
        run_dir: Annotated[Path, typer.Argument(
            metavar="RUN_DIR", help="a DAPO run directory (runs/<id>)")],
        as_json: Annotated[bool, typer.Option(
            "--json/--no-json", help="print JSON, not a table")] = False,
        reencode: Annotated[bool, typer.Option(
            help="also count actions that re-encoding their text would change (loads the "
                 "run's tokenizer)")] = True,
    ) -> None:
        """Check a DAPO run's artifacts for token exactness and report its truncations."""
        from rich.console import Console
        from rich.table import Table

        from dapo_bench.errors import UserError
        from dapo_bench.io import read_json
        from dapo_bench.methods.dapo.audit import audit_run

        if not run_dir.is_dir():
            raise UserError(f"{run_dir}: no such run directory")
        tok = None
        if reencode and (run_dir / "config.json").is_file():
            from dapo_bench.models import load_tokenizer

            tok = load_tokenizer(read_json(run_dir / "config.json")["options"]["model"])
        rep = audit_run(run_dir, tok)
        if as_json:
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
