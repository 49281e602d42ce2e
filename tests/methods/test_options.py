"""Each option of ``dapo-bench train`` is declared once, a dataclass field with its help: a run
option is a ``methods.options.RunOptions`` field, a method's own flag a field of its config that
its registration names (``register_method(..., flags=...)``). ``train --help`` and
docs/training.md's two tables are made from those declarations, and a field added to
``RunOptions``, or a flag to a registration, is in the help and in the table with nothing else
written."""

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from _command_cli import assert_docs_table, assert_each_field_in_help, command_cli, command_help
from typer.testing import CliRunner

from dapo_bench.commands import train as train_command
from dapo_bench.errors import UserError
from dapo_bench.methods import FLAG_MODULES, METHODS
from dapo_bench.methods.base import flag_overrides, method_flags, register_method
from dapo_bench.methods.options import RunOptions, flag, option, options_table

DOCS = Path(__file__).resolve().parents[2] / "docs" / "training.md"


def _app(option_cls: type = RunOptions) -> typer.Typer:
    return command_cli(train_command.register, option_cls)


def _help(option_cls: type = RunOptions) -> str:
    return command_help(train_command.register, ["train"], option_cls)


def _docs_table(marker: str) -> str:
    text = DOCS.read_text()
    block = re.search(rf"<!-- {marker}: [^\n]*-->\n(.*?)<!-- /{marker} -->", text, re.DOTALL)
    assert block, f"docs/training.md lost its {marker} table markers"
    return block[1]


def test_the_docs_table_is_the_one_the_fields_make():
    assert_docs_table(RunOptions, "training.md")


def test_the_docs_method_flags_table_is_the_one_the_registrations_make():
    assert _docs_table("method-flags") == options_table(method_flags()), (
        "docs/training.md's method-flags table differs from the registrations: regenerate it "
        "with dapo_bench.config.options_table(dapo_bench.methods.base.method_flags())")


def test_every_field_is_a_flag_with_its_help():
    assert_each_field_in_help(RunOptions, _help())


class _Knob(Exception):
    pass


def test_a_field_added_once_is_a_flag_in_help_in_the_table_and_in_the_options(monkeypatch):
    @dataclasses.dataclass(frozen=True)
    class WithKnob(RunOptions):
        frobnicate: int = option(3, "how hard to frobnicate (a new knob)", metavar="N")

    assert "--frobnicate N" in _help(WithKnob)
    assert "how hard to frobnicate (a new knob) [default: 3]" in _help(WithKnob)
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
                                              "--eval-tasks", "arith", "--no-control",
                                              "--threads", "1"])
    assert isinstance(res.exception, _Knob), res.output
    assert seen[0].frobnicate == 7 and seen[0].eval_tasks == ("arith", "arith_ood")
    assert seen[0].threads == 1
    assert seen[0].control is False and type(seen[0]) is WithKnob


def test_every_method_flag_is_in_help_with_the_methods_that_take_it():
    text = _help()
    flags = 0
    for e in METHODS:
        helps = {f.name: f.metadata.get("help") for f in dataclasses.fields(e.obj.config_cls)}
        for name in e.obj.flags:
            takers = ", ".join(m.name for m in METHODS if name in m.obj.flags)
            assert re.search(rf"{flag(name)} \S+ {takers} only: ", text), name
            assert re.sub(r"\s+", " ", helps[name]) in text, name
            flags += 1
    assert flags >= 4  # DAPO's --beta, --n-rollouts, --mc-samples, --iterations


def test_train_help_reads_the_registrations_without_the_other_methods():
    """The flags ``train --help`` shows without torch, from ``FLAG_MODULES``' registrations,
    are those of every method: a method with flags of its own registers in one of them."""
    code = ("import sys\nfrom dapo_bench.config import options_table\n"
            "from dapo_bench.methods.base import method_flags\n"
            "print(options_table(method_flags()), end='')\nprint('torch' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, check=True)
    METHODS.names()  # every method registered
    assert p.stdout == options_table(method_flags()) + "False\n", p.stderr
    for e in METHODS:
        assert not e.obj.flags or e.obj.fn.__module__ in FLAG_MODULES, e.name


def test_a_method_flag_is_a_shorthand_for_set_after_the_users_sets(monkeypatch):
    """preset -> --config -> --set -> the named flags: ``--beta`` comes after every ``--set``."""
    seen = []

    def stop(method, opts, **kw):
        seen.append(kw["overrides"])
        raise _Knob("stop here")

    from dapo_bench import run

    monkeypatch.setattr(run, "run_training", stop)
    res = CliRunner().invoke(_app(), ["train", "--method", "dapo", "--beta", "0.02", "--set",
                                      "beta=0.5", "--set", "n_samples=4"])
    assert isinstance(res.exception, _Knob), res.output
    assert seen == [["beta=0.5", "n_samples=4", "beta=0.02"]]


def test_a_flag_registered_once_is_in_help_in_the_table_and_refused_by_other_methods(
        monkeypatch):
    METHODS.names()  # every method registered first, so that what this test adds is undone
    monkeypatch.setattr(METHODS, "_entries", dict(METHODS._entries))

    @dataclasses.dataclass(frozen=True)
    class KnobConfig:
        frobnicate: int = option(3, "how hard to frobnicate (a new knob)", metavar="N")
        beta: float = option(0.5, "the knob's own beta")
        plain: int = 1

    register_method("knob", config=KnobConfig, presets={"default": {}}, help="a test method",
                    flags=("frobnicate", "beta"))(lambda ctx, cfg: None)
    text = _help()
    assert "--frobnicate N knob only: how hard to frobnicate (a new knob)" in text
    assert "--beta F dapo, knob only: KL weight" in text  # the first method's help
    table = options_table(method_flags())
    assert "| `--frobnicate N` | - | knob only: how hard to frobnicate (a new knob) |" in table
    assert flag_overrides("knob", {"frobnicate": 7, "beta": None}) == ["frobnicate=7"]
    with pytest.raises(UserError, match=r"^--frobnicate is not a dapo option \(methods that take "
                                        r"it: knob\); use --set FIELD=VALUE$"):
        flag_overrides("dapo", {"frobnicate": 7})
    with pytest.raises(ValueError, match="'plain' is not a field of KnobConfig declared with"):
        register_method("knob2", config=KnobConfig, presets={"default": {}}, help="",
                        flags=("plain",))


def test_a_registered_flag_is_gone_after_the_test_that_added_it():
    assert "knob" not in METHODS.names()
    assert "frobnicate" not in {f.name for f in dataclasses.fields(method_flags())}
