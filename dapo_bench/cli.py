"""The ``dapo-bench`` command line: thin; parses arguments and calls the library.

User errors (:class:`dapo_bench.errors.UserError`) print one line and exit with status 2.
"""

from __future__ import annotations

import importlib
import sys

import typer

from dapo_bench.commands import COMMAND_MODULES
from dapo_bench.errors import UserError

app = typer.Typer(
    name="dapo-bench",
    help="Verifiers, benchmarks and training for reasoning LLMs. "
    "'dapo' here is DAPO (Liu et al., arXiv 2412.18279, step-level), not ByteDance's DAPO.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _mod in COMMAND_MODULES:
    try:
        importlib.import_module(_mod).register(app)
    except ModuleNotFoundError as _e:  # an area not built yet must not break the others
        if _e.name != _mod:
            raise


def main() -> None:
    try:
        app()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted; artifacts written so far are kept (rerun to resume)", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
