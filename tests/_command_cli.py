"""A command as the tests of its options drive it: registered on a fresh typer app with the
option classes given (a subclass with a field added, say), its ``--help`` as one line, and the
checks that a docs page's options table is the one rendered from a class and that each field
of a class is a flag of that help. ``eval_cli`` and ``eval_help`` are ``dapo-bench eval``'s."""

import dataclasses
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import typer
from typer.testing import CliRunner

from dapo_bench.commands import eval as eval_command
from dapo_bench.commands.eval import EvalOptions
from dapo_bench.config import field_flag, options_table
from dapo_bench.generation.openai_options import ServedOptions

DOCS = Path(__file__).resolve().parents[1] / "docs"


def command_cli(register: Callable[..., None], *classes: type) -> typer.Typer:
    """A fresh app with the command(s) ``register(app, *classes)`` adds."""
    cli = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)  # as the CLI's
    register(cli, *classes)
    cli.command("noop")(lambda: None)  # a second command keeps the command a sub-command
    return cli


def command_help(register: Callable[..., None], path: Sequence[str], *classes: type) -> str:
    """``<path> --help`` of :func:`command_cli`'s app, as one line."""
    res = CliRunner().invoke(command_cli(register, *classes), [*path, "--help"],
                             terminal_width=200)
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())


def eval_cli(served_cls: type = ServedOptions, eval_cls: type = EvalOptions) -> typer.Typer:
    return command_cli(eval_command.register, served_cls, eval_cls)


def eval_help(served_cls: type = ServedOptions, eval_cls: type = EvalOptions) -> str:
    return command_help(eval_command.register, ["eval"], served_cls, eval_cls)


def assert_docs_table(cls: type, doc: str) -> None:
    """docs/*doc*'s table between ``<!-- options: rendered from <cls> ...-->`` and
    ``<!-- /options -->`` is ``options_table(cls)``."""
    name = cls.__name__
    found = re.search(rf"<!-- options: rendered from {name} [^\n]*-->\n(.*?)<!-- /options -->",
                      (DOCS / doc).read_text(), re.DOTALL)
    assert found, f"docs/{doc} lost the markers around {name}'s options table"
    assert found[1] == options_table(cls), (
        f"docs/{doc}'s {name} table differs from the fields: regenerate it with "
        f"dapo_bench.config.options_table({name})")


def assert_each_field_in_help(cls: type, shown: str) -> str:
    """Every field of *cls* is a flag of *shown* (a ``--help`` as one line) with its help;
    *shown*."""
    for f in dataclasses.fields(cls):
        assert f.metadata.get("help"), f"{cls.__name__}.{f.name} has no help"
        assert field_flag(f) + " " in shown, f.name
        assert " ".join(f.metadata["help"].split()) in shown, f.name
    return shown
