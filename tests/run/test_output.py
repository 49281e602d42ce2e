"""What runs print and write: progress lines in the stage's own unit with a rate of new work
only, no deprecation noise from the hf backend, formatted numbers, honest stage FLOPs, and
result files as readable as every other output."""

from __future__ import annotations

import os
import stat
import warnings

import pytest

from dapo_bench.eval import progress as progress_mod
from dapo_bench.eval.progress import Progress
from dapo_bench.io import JsonlAppender, atomic_write_json, atomic_write_text

ARITH_REF = "dapo_bench/assets/arith-ref"


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_plain_progress_names_the_stage_unit_and_rates_only_new_items(monkeypatch, capsys):
    clock = Clock()
    monkeypatch.setattr(progress_mod.time, "perf_counter", clock)
    p = Progress(quiet=True)
    bar = p.start("mc labels", total=1000, done=0, unit="states")
    clock.t += 1.0
    p.advance(bar, 600, resumed=True)  # read back from the log of an interrupted run
    clock.t += 10.0
    p.advance(bar, 100)  # 100 new states in 10 s
    clock.t += 1.0
    p.finish(bar)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "mc labels: 700/1000 states, 10.00/s, ETA 30s", lines
    assert lines[1] == "mc labels: done (700/1000 states, 100 new) in 11.0s"


def test_a_line_right_after_a_resume_gives_no_rate(monkeypatch, capsys):
    # a training bar resumed from a checkpoint at step 15 logs step 16 a moment later: a rate
    # over that moment read 1084598.40/s
    clock = Clock()
    monkeypatch.setattr(progress_mod.time, "perf_counter", clock)
    p = Progress(quiet=True)
    bar = p.start("grpo steps", total=60, done=0, unit="steps")
    p.advance(bar, 15, resumed=True)
    clock.t += 0.001
    p.advance(bar, 1)
    clock.t += 20.0
    p.advance(bar, 44)
    p.finish(bar)
    assert capsys.readouterr().err.splitlines() == [
        "grpo steps: 16/60 steps", "grpo steps: 60/60 steps, 2.25/s, ETA 0s",
        "grpo steps: done (60/60 steps, 45 new) in 20.0s"]


def test_eval_resume_counts_done_problems_apart(monkeypatch, capsys):
    clock = Clock()
    monkeypatch.setattr(progress_mod.time, "perf_counter", clock)
    p = Progress(quiet=True)
    bar = p.start("gsm8k", total=10, done=4)  # eval's default unit: problems
    clock.t += 3.0
    p.advance(bar, 6)
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["gsm8k: 4/10 problems already done, resuming",
                     "gsm8k: 10/10 problems, 2.00/s, ETA 0s"]


def test_rich_progress_restarts_its_rate_after_resumed_items():
    p = Progress(quiet=True)
    from rich.console import Console
    from rich.progress import Progress as RichProgress

    p._rich = RichProgress(console=Console(file=open(os.devnull, "w")))  # noqa: SIM115
    bar = p.start("rollouts", total=10, done=0, unit="problems")
    p.advance(bar, 6, resumed=True)
    task = p._rich.tasks[0]
    assert task.completed == 6 and task.total == 10 and task.speed is None
    p.advance(bar, 2)
    assert p._rich.tasks[0].completed == 8
    p.close()


def test_sample_groups_reports_logged_chunks_as_resumed(tmp_path):
    from dapo_bench.generation.base import SamplingParams
    from dapo_bench.generation.hf import HFGenerator
    from dapo_bench.training.resumable import ResumableLog
    from dapo_bench.training.rollouts import Request, sample_groups
    from dapo_bench.training.scope import Scope

    gen = HFGenerator(ARITH_REF, batch_size=16, threads=1)
    reqs = [Request(f"k{i}", f"p{i}", f"{i}+{i}=") for i in range(6)]
    params = SamplingParams(temperature=1.0, max_new_tokens=4, seed=0)
    score = lambda texts, ids, finished: [0.0] * len(texts)
    with ResumableLog(tmp_path / "log.jsonl") as log:  # a first run did 2 chunks of 2
        sample_groups(gen, reqs[:4], 1, score, params=params, chunk_size=2, log=log)
    calls = []
    with ResumableLog(tmp_path / "log.jsonl") as log:
        sample_groups(gen, reqs, 1, score, params=params, chunk_size=2, log=log,
                      scope=Scope(progress=lambda k, resumed=False: calls.append((k, resumed))))
    assert calls == [(2, True), (2, True), (2, False)]


def test_hf_backend_uses_the_current_cache_api(capfd):
    """transformers 5.24 warns on every forward given `past_key_values` (deprecated for
    `cache`); the backend must not trigger it, nor change what it generates."""
    from dapo_bench.generation.base import SamplingParams
    from dapo_bench.generation.hf import HFGenerator, _cache_argument

    gen = HFGenerator(ARITH_REF, batch_size=8, threads=1)
    params = SamplingParams(temperature=0.7, n=3, max_new_tokens=12, seed=1, logprobs=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = gen.generate(["12+7=", "3*4=", "100-1="], params)
    assert "deprecated" not in capfd.readouterr().err
    assert all(len(c) == 3 for c in out)
    import inspect

    forward = inspect.signature(type(gen._model).forward).parameters
    assert _cache_argument(gen._model) in forward


def test_log_numbers_are_formatted():
    """The critic's line once printed repr floats (Brier 0.24411448226639376)."""
    from dapo_bench.methods.dapo.critic import describe_skill

    line = describe_skill({"n": 60, "brier": 0.24411448226639376, "brier_constant": 0.25,
                           "brier_skill": 0.023542070934424964, "ece": 0.4940591295560201,
                           "bins": [0] * 10})
    assert line == ("held-out states 60: Brier 0.2441 vs constant 0.2500 (skill +0.024), "
                    "ECE 0.4941 (10 equal-width bins)")


def test_a_stage_with_its_own_ledger_logs_what_it_spent(tmp_path, capsys):
    """The control SFT keeps its own ledger (its FLOPs are not the method's), so the run's
    ledger has nothing for its stage: the line said "0 FLOPs" after spending 8.2e12."""
    from dapo_bench.methods.context import RunContext
    from dapo_bench.run import RunOptions

    ctx = RunContext(tmp_path, RunOptions(), n_params=1000, method="dapo")
    ctx.run_stage("control.sft", lambda: {"flops": 8.2e12, "steps": 3})
    ctx.run_stage("it1.states", lambda: {"n": 5})

    def charged():
        ctx.ledger.add_inf("it1.rollouts", 500)
        return {}

    ctx.run_stage("it1.rollouts", charged)
    err = capsys.readouterr().err
    assert "stage control.sft: " in err and "s, 8.2e+12 FLOPs (own ledger, not the run's)" in err
    assert "s, 0 FLOPs charged\n" in err and "s, 1e+06 FLOPs\n" in err
    assert ctx.ledger.total_flops == 1e6  # the control's spend stays out of the run's ledger


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_atomic_writes_get_the_mode_open_would_give(tmp_path, umask):
    old = os.umask(umask)
    try:
        atomic_write_json(tmp_path / "results.json", {"a": 1})
        atomic_write_text(tmp_path / "eval_config.json", "{}")
        with JsonlAppender(tmp_path / "samples.jsonl") as app:
            app.write({"x": 1})
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes == dict.fromkeys(("results.json", "eval_config.json", "samples.jsonl"),
                                  0o666 & ~umask)


def test_saved_policy_dir_is_readable(tmp_path):
    from dapo_bench.models import load_policy, save_policy

    model, tok = load_policy(ARITH_REF)
    old = os.umask(0o022)
    try:
        save_policy(model, tok, tmp_path / "actor")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "actor").stat().st_mode) == 0o755
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in (tmp_path / "actor").iterdir())


def test_saving_a_policy_prints_nothing_on_stdout(tmp_path):
    """With the deepspeed extra, transformers imports DeepSpeed, whose accelerator probe
    printed a WARNING line to stdout on CPU machines (inside train's output)."""
    import importlib.util
    import subprocess
    import sys

    import torch

    if importlib.util.find_spec("deepspeed") is None or torch.cuda.is_available():
        pytest.skip("needs the deepspeed extra on a machine without CUDA")
    code = ("from dapo_bench.commands.common import quiet_accelerator_probe\n"
            "quiet_accelerator_probe()\n"
            "from dapo_bench.models import load_policy, save_policy\n"
            f"m, t = load_policy({ARITH_REF!r}); save_policy(m, t, {str(tmp_path / 'p')!r})\n"
            "import deepspeed\n")
    env = {k: v for k, v in os.environ.items() if k != "DS_ACCELERATOR"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300, check=True)
    assert p.stdout == ""
