"""Each run option is declared once (``methods.options.RunOptions``, a field with its help):
``dapo-bench train --help`` and docs/training.md's options table are made from the fields, and
a field added to the class is a flag, in the help and in the table, with nothing else written."""

import dataclasses
import re
from pathlib import Path

import typer
from typer.testing import CliRunner

from dapo_bench.commands import train as train_command
from dapo_bench.methods.options import RunOptions, flag, option, options_table

DOCS = Path(__file__).resolve().parents[2] / "docs" / "training.md"


def _help(app: typer.Typer) -> str:
    out = CliRunner().invoke(app, ["train", "--help"], terminal_width=200).output
    return re.sub(r"\s+", " ", out)


def _app(option_cls: type = RunOptions) -> typer.Typer:
    app = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)  # as the CLI's
    train_command.register(app, option_cls)

    @app.command("other")  # two commands, so that typer keeps "train" as a sub-command
    def other() -> None:
        pass

    return app


def test_the_docs_table_is_the_one_the_fields_make():
    text = DOCS.read_text()
    block = re.search(r"<!-- options: [^\n]*-->\n(.*?)<!-- /options -->", text, re.DOTALL)
    assert block, "docs/training.md lost its options table markers"
    assert block[1] == options_table(RunOptions), (
        "docs/training.md's options table differs from RunOptions: regenerate it with "
        "dapo_bench.config.options_table(RunOptions)")


def test_every_field_is_a_flag_with_its_help():
    text = _help(_app())
    for f in dataclasses.fields(RunOptions):
        assert f.metadata.get("help"), f"RunOptions.{f.name} has no help"
        assert flag(f.name) in text, f.name
        assert re.sub(r"\s+", " ", f.metadata["help"]) in text, f.name


class _Knob(Exception):
    pass


def test_a_field_added_once_is_a_flag_in_help_in_the_table_and_in_the_options(monkeypatch):
    @dataclasses.dataclass(frozen=True)
    class WithKnob(RunOptions):
        frobnicate: int = option(3, "how hard to frobnicate (a new knob)", metavar="N")

    assert "--frobnicate N" in _help(_app(WithKnob))
    assert "how hard to frobnicate (a new knob) [default: 3]" in _help(_app(WithKnob))
    assert "| `--frobnicate N` | `3` | how hard to frobnicate (a new knob) |" in options_table(
        WithKnob)
    seen = []

    def stop(method, opts, **kw):  # the run itself is not the point: what reached it is
        seen.append(opts)
        raise _Knob("stop here")

    from dapo_bench import run

    monkeypatch.setattr(run, "run_training", stop)
    res = CliRunner().invoke(_app(WithKnob), ["train", "--method", "sft", "--frobnicate", "7",
                                              "--eval-tasks", "arith,arith_ood",
                                              "--eval-tasks", "arith", "--no-control"])
    assert isinstance(res.exception, _Knob), res.output
    assert seen[0].frobnicate == 7 and seen[0].eval_tasks == ("arith", "arith_ood")
    assert seen[0].control is False and type(seen[0]) is WithKnob
