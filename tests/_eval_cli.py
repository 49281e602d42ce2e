"""``dapo-bench eval`` as the tests of its options drive it: the command registered on a fresh
typer app with the option classes given (a subclass with a field added, say), its ``--help``
as one line, and the options tables docs/tasks.md renders from those classes."""

import dataclasses
import re
from pathlib import Path

import typer
from typer.testing import CliRunner

from dapo_bench.commands import eval as eval_command
from dapo_bench.commands.eval import EvalOptions
from dapo_bench.config import flag, options_table
from dapo_bench.generation.openai_options import ServedOptions

TASKS_DOC = Path(__file__).resolve().parents[1] / "docs" / "tasks.md"


def eval_cli(served_cls: type = ServedOptions, eval_cls: type = EvalOptions) -> typer.Typer:
    cli = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)  # as the CLI's
    eval_command.register(cli, served_cls, eval_cls)
    cli.command("noop")(lambda: None)  # a second command keeps "eval" a sub-command
    return cli


def eval_help(served_cls: type = ServedOptions, eval_cls: type = EvalOptions) -> str:
    res = CliRunner().invoke(eval_cli(served_cls, eval_cls), ["eval", "--help"],
                             terminal_width=200)
    return " ".join(res.output.split())


def assert_docs_table(cls: type) -> None:
    """docs/tasks.md's table between ``<!-- options: rendered from <cls> ...-->`` and
    ``<!-- /options -->`` is ``options_table(cls)``."""
    name = cls.__name__
    found = re.search(rf"<!-- options: rendered from {name}[^\n]*-->\n(.*?)<!-- /options -->",
                      TASKS_DOC.read_text(), re.DOTALL)
    assert found, f"docs/tasks.md lost the markers around {name}'s options table"
    assert found[1] == options_table(cls), (
        f"docs/tasks.md's {name} table differs from the fields: regenerate it with "
        f"dapo_bench.config.options_table({name})")


def assert_each_field_in_help(cls: type) -> str:
    """Every field of ``cls`` is a flag of ``eval --help`` shown with its help; the help."""
    shown = eval_help()
    for f in dataclasses.fields(cls):
        assert f.metadata.get("help"), f"{cls.__name__}.{f.name} has no help"
        assert flag(f.name) + " " in shown, f.name
        assert " ".join(f.metadata["help"].split()) in shown, f.name
    return shown
