"""Each served-model option is declared once (``generation.openai_options.ServedOptions``, a
field with its help): ``dapo-bench eval --help``, the flags that need ``--backend openai``, the
generator's keywords and docs/tasks.md's table of them are made from the fields, and a field
added to the class is all of these with nothing else written. No server is started here."""

import dataclasses

import pytest
from _command_cli import assert_docs_table, assert_each_field_in_help, eval_cli, eval_help
from typer.testing import CliRunner

from dapo_bench.config import flag, option, options_table
from dapo_bench.errors import UserError
from dapo_bench.generation import openai_options
from dapo_bench.generation.openai_options import ServedOptions


@dataclasses.dataclass(frozen=True)
class WithKnob(ServedOptions):
    warp_factor: int | None = option(None, "openai: how far to warp each request (a new knob)")




def test_docs_tasks_md_renders_the_served_options_table_from_the_fields():
    assert_docs_table(ServedOptions, "tasks.md")


def test_eval_help_shows_each_served_field_with_its_help():
    shown = assert_each_field_in_help(ServedOptions, eval_help())
    assert all(f"{flag(f.name)} <" in shown for f in dataclasses.fields(ServedOptions))  # <type>


def test_given_names_the_flags_set_in_declaration_order():
    assert ServedOptions().given() == []
    assert ServedOptions(max_retries=0, base_url="http://x/v1").given() == ["--base-url",
                                                                              "--max-retries"]


def test_the_generator_gets_each_given_field_as_its_keyword(monkeypatch):
    seen = {}
    monkeypatch.setattr(openai_options, "load_generator",
                        lambda backend, model, **kw: seen.update(kw, backend=backend, model=model))
    ServedOptions(base_url="http://x/v1", request_timeout=9.0, extra_body='{"top_k": 20}'
                  ).generator("m")
    assert seen == {"backend": "openai", "model": "m", "base_url": "http://x/v1", "timeout": 9.0,
                    "extra_body": {"top_k": 20}, "key_required": False,
                    "api_key_env": "OPENAI_API_KEY"}
    with pytest.raises(UserError, match="^--extra-body: not valid JSON"):
        ServedOptions(extra_body="{x").generator("m")


class _Reached(Exception):
    pass


def test_a_field_added_once_is_an_eval_flag_a_table_row_and_an_openai_only_option(tmp_path):
    assert "--warp-factor <int> openai: how far to warp each request (a new knob)" in eval_help(
        WithKnob)
    assert "| `--warp-factor` | - | openai: how far to warp each request (a new knob) |" in (
        options_table(WithKnob))
    base = ["eval", "--tasks", "arith", "--limit", "1", "--out", str(tmp_path), "--warp-factor", "9"]
    res = CliRunner().invoke(eval_cli(WithKnob), base)
    assert isinstance(res.exception, UserError), res.output
    assert str(res.exception) == "--warp-factor is an option of --backend openai (got --backend hf)"

    reached = []

    class Stop(WithKnob):
        def generator(self, model):  # what reached the generator, before any server is asked
            reached.append(self)
            raise _Reached

    res = CliRunner().invoke(eval_cli(Stop),
                             [*base, "--backend", "openai", "--base-url", "http://x/v1"])
    assert isinstance(res.exception, _Reached), res.output
    assert reached[0].warp_factor == 9 and reached[0].base_url == "http://x/v1"
    assert not any(tmp_path.iterdir())
