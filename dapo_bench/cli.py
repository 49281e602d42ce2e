"""The ``dapo-bench`` command line: thin; parses arguments and calls the library.

User errors (:class:`dapo_bench.errors.UserError`) and usage errors (an unknown flag, a bad
value) print one line and exit with status 2; a run stopped on purpose by a watch
(:class:`dapo_bench.errors.RunStopped`: ``--stop-on-cheat``, the exploit zoo) prints one
``stopped:`` line and exits with status 3. The flag conventions are in
``dapo_bench.commands.common``.
Ctrl-C prints one line (for ``eval`` and ``train``: artifacts kept, and the command that
resumes) and exits with status 130. Typer turns a KeyboardInterrupt that reaches it into a
bare exit 130, so every command's callback is wrapped to turn it into :class:`Interrupted`
first. A rank under torchrun that is stopped because another node was lost (torchrun's SIGTERM,
or a collective whose peer went away) prints one line saying so and the command that resumes
(:mod:`dapo_bench.nodes`).
"""

from __future__ import annotations

import functools
import importlib
import shlex
import sys
from typing import Annotated, Any

import typer

from dapo_bench import __version__
from dapo_bench.commands import COMMAND_MODULES
from dapo_bench.errors import RunStopped, UserError

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


RESUMABLE = ("eval", "train")  # commands whose rerun resumes from the artifacts kept


class Interrupted(Exception):
    """Ctrl-C inside a command (carried past typer, which would swallow a KeyboardInterrupt)."""


def _interruptible(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt:
            raise Interrupted from None

    return wrapper


def _wrap_commands(typer_app: typer.Typer) -> None:
    for cmd in typer_app.registered_commands:
        cmd.callback = _interruptible(cmd.callback)
    for group in typer_app.registered_groups:
        assert group.typer_instance is not None  # add_typer() always gives one
        _wrap_commands(group.typer_instance)


for _mod in COMMAND_MODULES:
    try:
        importlib.import_module(_mod).register(app)
    except ModuleNotFoundError as _e:  # an area not built yet must not break the others
        if _e.name != _mod:
            raise
_wrap_commands(app)


def interrupted_message(argv: list[str]) -> str:
    """What Ctrl-C prints: for a resumable command, the command line that resumes it (the
    same one: default run ids are a function of the settings)."""
    if argv and argv[0] in RESUMABLE:
        return ("interrupted; artifacts kept, rerun to resume: "
                + shlex.join(["dapo-bench", *argv]))
    return "interrupted"


def _usage_error_class() -> Any:
    """click's UsageError as typer raises it: typer >= 0.2x vendors click as typer._click, older
    typer uses click itself (two unrelated classes, hence Any)."""
    try:
        return importlib.import_module("typer._click.exceptions").UsageError
    except ImportError:  # pragma: no cover
        return importlib.import_module("click.exceptions").UsageError


def main() -> None:
    from dapo_bench import nodes

    usage_error = _usage_error_class()
    nodes.stop_on_launcher_sigterm()
    try:
        rc = app(prog_name="dapo-bench", standalone_mode=False)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except RunStopped as e:
        print(f"stopped: {e}", file=sys.stderr)
        sys.exit(RunStopped.exit_code)
    except usage_error as e:
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `dapo-bench` / `dapo-bench sandbox`
            e.show()
            sys.exit(0)
        ctx = getattr(e, "ctx", None)
        where = ctx.command_path if ctx is not None else "dapo-bench"
        print(f"error: {e.format_message()} (see '{where} -h')", file=sys.stderr)
        sys.exit(2)
    except (Interrupted, KeyboardInterrupt):
        lost = nodes.lost_rank_message(None, sys.argv[1:])  # torchrun's SIGTERM: a node was lost
        if lost is None or lost:
            print(lost or interrupted_message(sys.argv[1:]), file=sys.stderr, flush=True)
        sys.exit(130 if lost is None else 143)
    except Exception as e:  # a collective whose peer went away: one line, not a traceback
        lost = nodes.lost_rank_message(e, sys.argv[1:])
        if lost is None:
            raise
        print(lost, file=sys.stderr, flush=True)
        sys.exit(1)
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
