"""The CLI as one interface: the conventions of ``dapo_bench.commands.common`` hold for every
sub-command of the built CLI (adding a command that breaks one fails here)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import typer.main
from typer.testing import CliRunner

from dapo_bench import __version__
from dapo_bench.cli import app
from dapo_bench.commands.common import split_names
from dapo_bench.errors import UserError

CLI = [sys.executable, "-m", "dapo_bench.cli"]


def _commands():
    """(path, click command) of every leaf command, e.g. (("sandbox", "check"), cmd)."""
    out = []

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, (*path, name))
        else:
            out.append((path, cmd))

    walk(typer.main.get_command(app), ())
    return out


COMMANDS = _commands()
IDS = [" ".join(p) for p, _ in COMMANDS]


def _help(path) -> str:
    res = CliRunner().invoke(app, [*path, "-h"], terminal_width=100)
    assert res.exit_code == 0, res.output
    return res.output


def test_every_command_is_found():
    assert {"list", "verify", "eval", "train", "leaderboard", "audit", "sandbox check"} <= set(IDS)


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=IDS)
def test_no_short_flags_but_h(path, cmd):
    """Long flags only (as lm-eval, vLLM and TRL): `-m` meant --model in eval and --method in
    train before; the one short flag is -h."""
    for p in cmd.params:
        for flag in (*p.opts, *p.secondary_opts):
            if flag.startswith("-") and not flag.startswith("--"):
                assert flag == "-h", f"{' '.join(path)}: short flag {flag}"
    assert "-h, --help" in _help(path)


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=IDS)
def test_help_ends_with_examples(path, cmd):
    text = _help(path).rstrip()
    _, sep, tail = text.rpartition("Examples:")
    assert sep, f"{' '.join(path)} -h has no examples"
    lines = [ln.strip() for ln in tail.strip().splitlines()]
    assert 2 <= len(lines) <= 3, lines
    for ln in lines:
        assert ln.startswith("dapo-bench " + " ".join(path)), ln


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=IDS)
def test_switches_are_switches(path, cmd):
    """A boolean is --x/--no-x (or a lone switch), never `--x <bool>` taking a value."""
    for p in cmd.params:
        if getattr(p, "is_bool_flag", False) or getattr(p, "type", None) is bool:
            assert p.is_flag, f"{p.opts} takes a value"
    assert "<bool>" not in _help(path)


def test_version_prints_the_package_version():
    import importlib.metadata

    out = subprocess.run([*CLI, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout == f"dapo-bench {__version__}\n"
    assert importlib.metadata.version("dapo-bench") == __version__


def test_usage_errors_are_one_line():
    for args, want in ((["eval", "--bogus"], "No such option: --bogus"),
                       (["eval", "--limit", "x"], "'--limit'"),
                       (["nosuch"], "No such command 'nosuch'"),
                       (["eval", "-m", "x"], "No such option: -m")):
        p = subprocess.run([*CLI, *args], check=False, capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, (args, p.stderr)
        assert p.stderr.count("\n") == 1 and p.stderr.startswith("error: "), p.stderr
        assert want in p.stderr and "-h'" in p.stderr, p.stderr


def test_unknown_method_is_refused_before_torch_is_imported():
    code = ("import sys; from dapo_bench.cli import main; sys.argv = ['dapo-bench', 'train', "
            "'--method', 'nosuch']\ntry:\n    main()\nexcept SystemExit as e:\n"
            "    print(e.code, 'torch' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       check=False)
    assert p.stdout.split() == ["2", "False"], p.stdout + p.stderr
    assert p.stderr == ("error: --method 'nosuch': unknown (methods: dapo, sft, rft, dpo, grpo, "
                        "ppo)\n")


def test_name_lists_are_comma_separated_or_repeated():
    assert split_names(["gsm8k,math500", "arith"], "--tasks") == ["gsm8k", "math500", "arith"]
    assert split_names("a, b,a", "--eval-tasks") == ["a", "b"]
    assert split_names(None, "--tasks") == []
    with pytest.raises(UserError, match=r"--tasks 'a,,b': empty name"):
        split_names(["a,,b"], "--tasks")


def test_eval_and_train_spell_the_same_ideas_alike():
    eval_help, train_help = _help(("eval",)), _help(("train",))
    for flag in ("--tasks", "--limit", "--max-new-tokens"):
        assert flag in eval_help
        assert "--eval-" + flag[2:] in train_help
    assert "--model" in eval_help and "--model" in train_help
    for text in (eval_help, train_help):  # --max-new-tokens 0 is documented
        assert re.search(r"0 or unset\s+=\s+each task's\s+own", text), text


def test_train_method_help_lists_the_methods():
    from dapo_bench.methods import METHOD_NAMES, METHODS

    assert sorted(METHOD_NAMES) == METHODS.names()
    assert " | ".join(METHOD_NAMES) in re.sub(r"\s+", " ", _help(("train",)))


def test_method_specific_flags_say_and_check_which_methods_take_them(tmp_path):
    from dapo_bench.methods import METHODS

    train = dict(COMMANDS)[("train",)]
    for flag in ("beta", "n_rollouts", "mc_samples", "iterations"):
        takers = [e.name for e in METHODS if flag in e.obj.flags]
        param = next(p for p in train.params if p.name == flag)
        assert param.help.startswith(f"{', '.join(takers)} only: "), param.help
    p = subprocess.run([*CLI, "train", "--method", "sft", "--beta", "0.1", "--out", str(tmp_path)],
                       check=False, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert p.stderr == ("error: --beta is not a sft option (methods that take it: dapo); use "
                        "--set FIELD=VALUE\n")
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_train_engine_and_control_flags_fill_the_run_options(cli, monkeypatch, tmp_path):
    """--micro-batch, --control-batch-size, --control-lr and --checkpoint-every reach
    RunOptions; unset, the control keeps its defaults, which the help states."""
    from dapo_bench import run
    from dapo_bench.training.control import CONTROL_BATCH_SIZE, CONTROL_LR

    seen = []

    def fake_run(method, opts, **kw):
        seen.append(opts)
        raise UserError("stop here")

    monkeypatch.setattr(run, "run_training", fake_run)
    out = ["--out", str(tmp_path)]
    assert cli(["train", "--method", "sft", "--micro-batch", "8", "--control-batch-size", "4",
                "--control-lr", "3e-5", "--checkpoint-every", "50", *out])[0] == 2
    assert cli(["train", "--method", "sft", *out])[0] == 2
    assert (seen[0].micro_batch, seen[0].control_batch_size, seen[0].control_lr,
            seen[0].checkpoint_every) == (8, 4, 3e-5, 50)
    assert (seen[1].micro_batch, seen[1].control_batch_size, seen[1].control_lr,
            seen[1].checkpoint_every) == (0, CONTROL_BATCH_SIZE, CONTROL_LR, 0)
    text = re.sub(r"\s+", " ", _help(("train",)))
    lr = re.search(r"--control-lr F the control's SFT learning rate \[default: ([\de.-]+)\]", text)
    bs = re.search(r"--control-batch-size N the control's SFT pairs per step \[default: (\d+)\]",
                   text)
    assert lr and bs and (int(bs[1]), float(lr[1])) == (CONTROL_BATCH_SIZE, CONTROL_LR), text


def test_list_prints_help_texts_as_written():
    """A ``\\b`` in a non-raw help string printed 'The answer is oxed{N}.': the built CLI's
    ``list`` shows ``\\boxed`` and no control character but the line breaks."""
    p = subprocess.run([*CLI, "list"], capture_output=True, text=True, timeout=60, check=True,
                       env={**os.environ, "COLUMNS": "200"})
    assert "'The answer is \\boxed{N}.'" in p.stdout, p.stdout
    assert not [c for c in p.stdout if ord(c) < 32 and c != "\n"], p.stdout
