"""The ``dapo-bench`` command line: thin; parses arguments and calls the library.

User errors (:class:`dapo_bench.errors.UserError`) and usage errors (an unknown flag, a bad
value) print one line and exit with status 2. The flag conventions are in
``dapo_bench.commands.common``.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated

import typer

from dapo_bench import __version__
from dapo_bench.commands import COMMAND_MODULES
from dapo_bench.errors import UserError

app = typer.Typer(
    name="dapo-bench",
    help="Verifiers, benchmarks and training for reasoning LLMs. "
    "'dapo' here is DAPO (Liu et al., arXiv 2412.18279, step-level), not ByteDance's DAPO.",
    epilog="Run 'dapo-bench COMMAND -h' for a command's flags and examples.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # plain help (as argparse prints it for lm-eval and vLLM): switches read --x/--no-x, long
    # flag names are never cut, and the text can be grepped
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        print(f"dapo-bench {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="print the version and exit")] = False,
) -> None:
    """Verifiers, benchmarks and training for reasoning LLMs."""


for _mod in COMMAND_MODULES:
    try:
        importlib.import_module(_mod).register(app)
    except ModuleNotFoundError as _e:  # an area not built yet must not break the others
        if _e.name != _mod:
            raise


def _usage_error_class() -> type[Exception]:
    try:  # typer >= 0.2x vendors click as typer._click; older typer uses click itself
        from typer._click.exceptions import UsageError
    except ImportError:  # pragma: no cover
        from click.exceptions import UsageError
    return UsageError


def main() -> None:
    usage_error = _usage_error_class()
    try:
        rc = app(prog_name="dapo-bench", standalone_mode=False)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except usage_error as e:
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `dapo-bench` / `dapo-bench sandbox`
            e.show()
            sys.exit(0)
        ctx = getattr(e, "ctx", None)
        where = ctx.command_path if ctx is not None else "dapo-bench"
        print(f"error: {e.format_message()} (see '{where} -h')", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted; artifacts written so far are kept (rerun to resume)", file=sys.stderr)
        sys.exit(130)
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
