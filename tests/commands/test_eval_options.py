"""Each option of ``dapo-bench eval`` is declared once (``commands.eval.EvalOptions``, a field with
its help; the served model's are ``ServedOptions``, tests/generation/test_openai_options.py):
``eval --help`` and docs/tasks.md's table of eval's options are made from the fields, and a field
added to the class is a flag, a table row and a value the command reads with nothing else
written. No model is loaded here."""

import dataclasses

from _command_cli import assert_docs_table, assert_each_field_in_help, eval_cli, eval_help
from typer.testing import CliRunner

from dapo_bench.commands import eval as eval_command
from dapo_bench.commands.common import options_of
from dapo_bench.commands.eval import EvalOptions
from dapo_bench.config import option, options_table


@dataclasses.dataclass(frozen=True)
class WithKnob(EvalOptions):
    warp_factor: int = option(3, "how far to warp each problem (a new knob)", metavar="N")




def test_docs_tasks_md_renders_the_eval_options_table_from_the_fields():
    assert_docs_table(EvalOptions, "tasks.md")


def test_eval_help_shows_each_eval_field_with_its_help_before_the_served_ones():
    shown = assert_each_field_in_help(EvalOptions, eval_help())
    assert shown.index("--report-to ") < shown.index("--base-url ")


def test_the_flags_keep_their_spelling_metavars_and_defaults():
    shown = eval_help()
    for text in ("--tasks NAME[,NAME...] tasks", "--data-file TASK=PATH a task's",
                 "--quiet / --no-quiet", "--top-p <float>", "--n <int>", "--data-dir <path>",
                 "[default: runs]", "[default: 64]", "[default: hf]"):
        assert text in shown, text


class _Reached(Exception):
    pass


def options_read(monkeypatch, eval_cls: type, args: list[str]) -> EvalOptions:
    """The EvalOptions object the command made of *args*, stopped at its first check (before
    anything is loaded or written)."""
    made = []

    def recorded(cls, values):
        made.append(options_of(cls, values))
        return made[-1]

    def stop(report_to):
        raise _Reached

    monkeypatch.setattr(eval_command, "options_of", recorded)
    monkeypatch.setattr("dapo_bench.telemetry.check_report_to", stop)
    res = CliRunner().invoke(eval_cli(eval_cls=eval_cls), ["eval", *args])
    assert isinstance(res.exception, _Reached), res.output
    return made[0]


def test_a_field_added_once_is_an_eval_flag_a_table_row_and_a_value(monkeypatch, tmp_path):
    assert "--warp-factor N how far to warp each problem (a new knob) [default: 3]" in (
        eval_help(eval_cls=WithKnob))
    assert "| `--warp-factor N` | `3` | how far to warp each problem (a new knob) |" in (
        options_table(WithKnob))
    opts = options_read(monkeypatch, WithKnob, ["--out", str(tmp_path), "--warp-factor", "9"])
    assert isinstance(opts, WithKnob) and opts.warp_factor == 9
    assert not any(tmp_path.iterdir())


def test_the_command_reads_name_lists_split_and_data_files_whole(monkeypatch, tmp_path):
    opts = options_read(monkeypatch, EvalOptions, [
        "--tasks", "arith,arith", "--tasks", "arith_ood", "--data-file", "arith=a,b.jsonl",
        "--data-file", "arith_ood=c.jsonl", "--out", str(tmp_path), "--quiet"])
    assert opts == EvalOptions(tasks=("arith", "arith_ood"), out=tmp_path, quiet=True,
                               data_file=["arith=a,b.jsonl", "arith_ood=c.jsonl"])
    assert options_read(monkeypatch, EvalOptions, []) == EvalOptions()
