"""``dapo-bench leaderboard [SPEC...] [--runs DIR] [--out DIR]``: render leaderboards.

Renders each spec (default: every ``leaderboards/*.yaml``) into Markdown, LaTeX, CSV and PNG
plots beside it (or into ``--out``). Result files that a spec's globs find but that are bad or
partial are skipped and listed on stderr and in the Markdown; a bad file named in a spec is an
error (exit 2). Every spec, ``--runs`` and ``--out`` is checked before the first file is
written: a ``--runs`` that does not exist or holds no result file a spec uses is an error that
writes nothing (the spec's own ``inputs.dir`` may be empty). Rendering is a pure function of
the files: run it twice, get the same bytes. Its flags are the fields of
:class:`LeaderboardOptions`, each declared once with its help.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from dapo_bench.commands.common import examples, options_of, with_options
from dapo_bench.config import option

EXAMPLES = examples("""
    dapo-bench leaderboard                            # every leaderboards/*.yaml, in place
    dapo-bench leaderboard leaderboards/arith.yaml --runs runs --out /tmp/board
    dapo-bench leaderboard leaderboards/math.yaml --no-plots
""")


@dataclass(frozen=True)
class LeaderboardOptions:
    """``dapo-bench leaderboard``'s flags (``SPEC.yaml`` are its arguments), each declared once,
    here, with its help: a flag (:func:`register` makes them from the fields) and a row of
    docs/leaderboards.md's options table (``config.options_table``;
    tests/commands/test_command_options.py keeps the two equal)."""

    # option() makes a field whose default is the value given: ruff cannot tell from a Path
    runs: Path | None = option(  # noqa: RUF009
        None, "directory the spec's result globs are relative to (default: the spec's "
        "inputs.dir)")
    out: Path | None = option(  # noqa: RUF009
        None, "write outputs here (default: beside each spec)")
    plots: bool = option(True, "draw the PNG plots")
    quiet: bool = option(False, "only warnings and errors")


def register(app: typer.Typer, option_cls: type = LeaderboardOptions) -> None:
    """Add ``leaderboard`` to *app*, its flags made from *option_cls*' fields
    (``LeaderboardOptions``; the tests pass a subclass with a field added)."""

    def leaderboard_cmd(
        specs: list[Path] | None = typer.Argument(  # noqa: B008 (typer's idiom)
            None, metavar="SPEC.yaml", help="leaderboard specs (default: leaderboards/*.yaml)"),
        **values: Any,
    ) -> None:
        """Render leaderboard tables (md, tex, csv) and plots (png) from result files.

        'DAPO' in tables is DAPO of Liu et al. (arXiv 2412.18279, step-level), not ByteDance's.
        """
        from rich.console import Console
        from rich.markup import escape

        from dapo_bench.errors import UserError
        from dapo_bench.io import check_input_file, check_out_dir
        from dapo_bench.leaderboard import default_specs, render
        from dapo_bench.leaderboard.build import check_runs
        from dapo_bench.leaderboard.spec import load_spec

        o = options_of(option_cls, values)
        runs, out = o.runs, o.out
        err = Console(stderr=True, highlight=False, soft_wrap=True)  # one line per message
        paths = list(specs or default_specs())
        if not paths:
            raise UserError("no leaderboard specs given and none in leaderboards/*.yaml")
        # every check before the first write: a bad spec, --runs or --out writes nothing
        for spec in paths:
            load_spec(check_input_file(spec))
            if runs is not None:
                check_runs(spec, runs)
            check_out_dir(out if out is not None else Path(spec).parent)
        for spec in paths:
            res = render(spec, runs, out, draw_plots=o.plots)
            for s in res.skipped:
                err.print(f"[yellow]warning[/yellow]: {escape(str(spec))}: skipped "
                          f"{escape(s.path)}: {escape(s.reason)}")
            for pid in res.not_drawn:
                err.print(f"[yellow]warning[/yellow]: {escape(str(spec))}: plot {pid!r} not "
                          "drawn (no result file carries its data)")
            if not o.quiet:
                err.print(escape(f"{spec}: {res.n_runs} result files, {len(res.skipped)} "
                                 "skipped -> " + ", ".join(p.name for p in res.written)))

    app.command("leaderboard", epilog=EXAMPLES)(with_options(leaderboard_cmd, option_cls))
