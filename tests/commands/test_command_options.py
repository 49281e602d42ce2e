"""Each option of ``serve``, ``verify``, ``leaderboard``, ``audit`` and ``sandbox check`` is
declared once, a field with its help (``ServeOptions`` ... beside each command): the command's
``--help`` and its docs page's options table are made from the fields, and a field added to
the class is a flag, a table row and a value the command reads with nothing else written.
(eval's are tests/commands/test_eval_options.py, train's tests/methods/test_options.py.)
Nothing is served, verified or rendered here."""

import dataclasses
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest
import typer.main
from _command_cli import assert_docs_table, assert_each_field_in_help, command_cli, command_help
from typer.testing import CliRunner

from dapo_bench.cli import app
from dapo_bench.commands import audit, leaderboard, sandbox, serve, verify
from dapo_bench.commands.eval import EvalOptions
from dapo_bench.config import field_flag, option, options_table
from dapo_bench.generation.openai_options import ServedOptions
from dapo_bench.methods.base import method_flags
from dapo_bench.methods.options import RunOptions


class Command(NamedTuple):
    register: Callable[..., None]
    path: tuple[str, ...]
    cls: type
    doc: str  # the docs page (under docs/) that holds the class's options table
    args: tuple[str, ...] = ()  # the positional arguments it needs


COMMANDS = [
    Command(serve.register, ("serve",), serve.ServeOptions, "serve.md"),
    Command(verify.register, ("verify",), verify.VerifyOptions, "math-verifier.md",
            ("x.jsonl",)),
    Command(leaderboard.register, ("leaderboard",), leaderboard.LeaderboardOptions,
            "leaderboards.md"),
    Command(audit.register, ("audit",), audit.AuditOptions, "training.md", ("runs/x",)),
    Command(sandbox.register, ("sandbox", "check"), sandbox.SandboxCheckOptions,
            "code-sandbox.md"),
]
IDS = [c.cls.__name__ for c in COMMANDS]


def with_knob(cls: type) -> type:
    """*cls* with a field added."""
    return dataclasses.make_dataclass(
        f"{cls.__name__}WithKnob",
        [("warp_factor", int, option(3, "how far to warp (a new knob)", metavar="N"))],
        bases=(cls,), frozen=True)


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_the_docs_page_renders_the_options_table_from_the_fields(cmd):
    assert_docs_table(cmd.cls, cmd.doc)


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_help_shows_each_field_with_its_help(cmd):
    assert_each_field_in_help(cmd.cls, command_help(cmd.register, cmd.path))


class _Reached(Exception):
    pass


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_a_field_added_once_is_a_flag_a_table_row_and_a_value(cmd, monkeypatch):
    knob = with_knob(cmd.cls)
    assert "--warp-factor N how far to warp (a new knob) [default: 3]" in command_help(
        cmd.register, cmd.path, knob)
    assert "| `--warp-factor N` | `3` | how far to warp (a new knob) |" in options_table(knob)
    made = []

    def recorded(cls, values):  # the options object the command made, then stop
        made.append(options_of(cls, values))
        raise _Reached

    module = sys.modules[cmd.register.__module__]
    options_of = module.options_of
    monkeypatch.setattr(module, "options_of", recorded)
    res = CliRunner().invoke(command_cli(cmd.register, knob),
                             [*cmd.path, *cmd.args, "--warp-factor", "9"])
    assert isinstance(res.exception, _Reached), res.output
    assert made == [knob(warp_factor=9)]


def test_the_flags_keep_their_spelling_and_defaults():
    shown = {c.cls.__name__: command_help(c.register, c.path) for c in COMMANDS}
    for name, text in (
            ("ServeOptions", "--allow-remote / --no-allow-remote"),
            ("ServeOptions", "[default: 127.0.0.1]"), ("ServeOptions", "[default: 16777216]"),
            ("ServeOptions", "--port <int>"), ("ServeOptions", "--timeout <float>"),
            ("VerifyOptions", "verify [OPTIONS] {FILE.jsonl}"),
            ("VerifyOptions", "FILE.jsonl <path> JSONL input, one object a line [required]"),
            ("VerifyOptions", "--explain / --no-explain"), ("VerifyOptions", "[default: math]"),
            ("LeaderboardOptions", "leaderboard [OPTIONS] [SPEC.yaml]..."),
            ("LeaderboardOptions", "--plots / --no-plots draw the PNG plots [default: plots]"),
            ("LeaderboardOptions", "--runs <path>"),
            ("AuditOptions", "--json / --no-json print JSON, not a table [default: no-json]"),
            ("AuditOptions", "--reencode / --no-reencode"), ("AuditOptions", "[default: reencode]"),
            ("SandboxCheckOptions", "--json / --no-json print JSON instead of a table")):
        assert text in shown[name], (name, text)


# the flags that are no field: train's, which pick the method and its config
OWN_FLAGS = {("train",): {"--method", "--config", "--preset", "--set"}}


def test_every_flag_of_the_cli_is_a_field_of_its_commands_option_classes():
    """A flag written by hand as a typer.Option (not a field) fails here."""
    classes = {c.path: (c.cls,) for c in COMMANDS}
    classes |= {("eval",): (EvalOptions, ServedOptions), ("train",): (RunOptions, method_flags()),
                ("list",): ()}
    seen = set()

    def walk(cmd, path):
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, (*path, name))
        if getattr(cmd, "commands", None) is None:
            fields = {field_flag(f) for cls in classes[path] for f in dataclasses.fields(cls)}
            flags = {p.opts[0] for p in cmd.params if p.param_type_name == "option"}
            assert flags == fields | OWN_FLAGS.get(path, set()), path
            seen.add(path)

    walk(typer.main.get_command(app), ())
    assert seen == set(classes)


README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_names_only_flags_its_commands_have():
    """README's command table lists flags by hand (a summary, not every flag): each flag it
    names is a flag of that command in the built CLI."""
    top = typer.main.get_command(app)
    rows = re.findall(r"^\| `dapo-bench ([^`]*)`", README.read_text(), re.MULTILINE)
    assert len(rows) >= 7, rows
    for row in rows:
        words = row.split()
        cmd = top.commands[words[0]]
        if hasattr(cmd, "commands"):  # a group: its sub-command is the next word
            cmd = cmd.commands[words[1]]
        have = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        named = set(re.findall(r"--[a-z][a-z0-9-]*", row))
        assert named <= have, (words[0], sorted(named - have))
