"""Reruns and resumes through the CLI on the embedded toy: a rerun resumes or extends, or is
refused with the flag or field that differs, and never mixes data or replaces a finished
result with a smaller one; a rejected command leaves nothing that blocks the corrected one;
Ctrl-C (a real SIGINT) says how to resume; default run ids are a function of the settings."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from _park import Parked

from dapo_bench.io import read_json, read_jsonl

ARITH = ["eval", "--tasks", "arith", "--max-new-tokens", "40", "--quiet"]


def _gsm8k(tmp_path, rows, name):
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from dapo_bench.toy import default_model_path

    return ["eval", "--tasks", "gsm8k", "--model", default_model_path(), "--data-file",
            f"gsm8k={p}", "--max-new-tokens", "8", "--quiet"]


def test_resume_with_other_data_rows_is_refused(tmp_path, cli):
    a = [{"id": "1", "question": "2+2?", "answer": "#### 4"},
         {"id": "2", "question": "3+3?", "answer": "#### 6"}]
    b = [{"id": "1", "question": "5+5?", "answer": "#### 10"}, a[1]]  # same ids, other question
    run = ["--out", tmp_path, "--run-id", "R"]
    assert cli([*_gsm8k(tmp_path, a, "A.jsonl"), *run])[0] == 0
    samples = (tmp_path / "R" / "samples.jsonl").read_bytes()
    code, err = cli([*_gsm8k(tmp_path, b, "B.jsonl"), *run])
    assert code == 2 and "other data (task gsm8k, problem id '0'" in err, err
    assert (tmp_path / "R" / "samples.jsonl").read_bytes() == samples  # nothing mixed in


def test_settings_name_the_flag_and_bind_only_once_samples_exist(tmp_path, cli):
    run = ["--limit", "2", "--out", tmp_path, "--run-id", "R"]
    code, err = cli([*ARITH, "--top-p", "2", *run])  # rejected: nothing written
    assert code == 2 and not (tmp_path / "R").exists()
    # a run dir whose settings file was written but which holds no sample yet
    (tmp_path / "R").mkdir()
    (tmp_path / "R" / "eval_config.json").write_text(json.dumps({"top_p": 0.1, "tasks": {}}))
    assert cli([*ARITH, "--top-p", "0.5", *run])[0] == 0  # the corrected command runs
    code, err = cli([*ARITH, "--top-p", "0.9", *run])
    assert code == 2 and "(--top-p differs)" in err, err
    code, err = cli([*ARITH, "--top-p", "0.5", "--max-new-tokens", "30", *run])
    assert code == 2 and "task arith: --max-new-tokens differs: 40 -> 30" in err, err


def test_finished_eval_extends_but_never_shrinks(tmp_path, cli):
    run = ["--out", tmp_path, "--run-id", "R"]
    assert cli([*ARITH, "--limit", "3", *run])[0] == 0
    first = read_jsonl(tmp_path / "R" / "samples.jsonl")
    assert cli([*ARITH, "--limit", "5", *run])[0] == 0  # extends: 3 reused, 2 generated
    rows = read_jsonl(tmp_path / "R" / "samples.jsonl")
    assert rows[:3] == first and len(rows) == 5
    results = (tmp_path / "R" / "results.json").read_bytes()
    assert json.loads(results)["tasks"]["arith"]["n_problems"] == 5
    for argv in ([*ARITH, "--limit", "2", *run],  # fewer problems
                 ["eval", "--tasks", "arith_ood", "--max-new-tokens", "40", *run]):  # other task
        code, err = cli(argv)
        assert code == 2 and "a finished eval of arith (5 problems)" in err, err
        assert (tmp_path / "R" / "results.json").read_bytes() == results


def test_default_run_id_is_a_function_of_the_settings(tmp_path, cli):
    code, err = cli([*ARITH, "--limit", "2", "--out", tmp_path])
    assert code == 0
    (rid,) = [p.name for p in tmp_path.iterdir()]
    assert rid.startswith("eval-arith-") and f"run {rid} -> " in err
    samples = (tmp_path / rid / "samples.jsonl").read_bytes()
    # cosmetic flags and an equivalent --out path: the same run, nothing generated again
    code, err = cli([*ARITH, "--limit", "2", "--batch-size", "3", "--out",
                     f"{tmp_path}/../{tmp_path.name}"])
    assert code == 0 and [p.name for p in tmp_path.iterdir()] == [rid]
    assert (tmp_path / rid / "samples.jsonl").read_bytes() == samples
    assert cli([*ARITH, "--limit", "2", "--seed", "1", "--out", tmp_path])[0] == 0
    assert len(list(tmp_path.iterdir())) == 2  # other settings: another run


def test_resumed_run_reports_the_seconds_of_all_its_parts(tmp_path, cli):
    run = ["--limit", "4", "--out", tmp_path, "--run-id", "R"]
    assert cli([*ARITH, *run])[0] == 0
    path = tmp_path / "R" / "samples.jsonl"
    rows = read_jsonl(path)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))  # as if stopped there
    (tmp_path / "R" / "results.json").unlink()
    assert cli([*ARITH, *run])[0] == 0
    res = read_json(tmp_path / "R" / "results.json")
    rows = read_jsonl(path)
    assert all(r["seconds"] > 0 for r in rows)
    total = sum(r["seconds"] for r in rows)
    assert res["tasks"]["arith"]["seconds"] == pytest.approx(total, abs=1e-3)
    assert res["provenance"]["run_seconds"] == pytest.approx(total, abs=0.01)


def _as_a_terminal_job() -> None:
    """Ctrl-C reaches the CLI as it reaches a job in a terminal. A suite started as a background
    job of a script (`make test &`) inherits SIGINT ignored, and Python then leaves it ignored
    (as it should for a nohup'd program), so the SIGINT below would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_says_how_to_resume(tmp_path, cli):
    """A real SIGINT to the CLI, sent while it is parked after logging its first problem (not a
    race against a fast machine): one line with the command that resumes, exit 130, the
    samples kept; the same command then generates only what is missing."""
    argv = ["eval", "--tasks", "arith", "--limit", "300", "--batch-size", "8", "--out",
            str(tmp_path), "--run-id", "R", "--quiet"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    err_log = tmp_path / "stderr"
    with err_log.open("w") as err_f:
        child = Parked(["-m", "dapo_bench.cli", *argv], "samples.jsonl", 1, env=env,
                       stdout=subprocess.DEVNULL, stderr=err_f, text=True,
                       preexec_fn=_as_a_terminal_job)
        try:
            assert child.wait_parked(), err_log.read_text()[-2000:]
            child.proc.send_signal(signal.SIGINT)
            child.proc.wait(timeout=120)
        finally:
            child.close()
    err = err_log.read_text()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert child.proc.returncode == 130, err
    assert lines[-1] == ("interrupted; artifacts kept, rerun to resume: dapo-bench "
                         + " ".join(argv)), err
    samples = tmp_path / "R" / "samples.jsonl"
    kept = read_jsonl(samples, allow_partial_tail=True)
    assert len(kept) == 1
    assert cli(argv[:3] + ["--limit", "40"] + argv[5:])[0] == 0  # resumes (a smaller run)
    assert read_jsonl(samples)[:1] == kept


def test_train_resume_rules(tmp_path):
    """Train: the run id ignores cosmetic and eval-only options; a changed setting is named by
    its flag with both values; a run whose eval began may extend its eval, not shrink it."""
    from dapo_bench.config import to_dict
    from dapo_bench.errors import UserError
    from dapo_bench.methods import METHODS
    from dapo_bench.run import RunOptions, resolve_config
    from dapo_bench.run.rundir import claim_run_dir, default_run_id

    spec = METHODS.get("dapo")

    def saved(**kw):
        opts = RunOptions(**{"eval_tasks": ("arith",), **kw})
        preset, cfg = resolve_config(spec, opts, None, None, ["beta=0.5"])
        return opts, {"method": "dapo", "preset": preset, "options": to_dict(opts),
                      "config": to_dict(cfg)}

    o1, s1 = saved(eval_limit=10)
    o2, s2 = saved(eval_limit=20, quiet=True, micro_batch=4, threads=3, out=f"{tmp_path}/./x",
                   eval_tasks=("arith", "arith_ood"))
    assert default_run_id("dapo", o1, s1) == default_run_id("dapo", o2, s2)
    assert default_run_id("dapo", o1, s1) != default_run_id("dapo", *saved(seed=1))
    run = tmp_path / "run"
    claim_run_dir(run, saved(seed=7)[1], spec)
    claim_run_dir(run, s1, spec)  # config.json alone (a rejected run) binds nothing
    (run / "stages").mkdir()
    (run / "stages" / "train.json").write_text("{}")  # now the run dir holds work
    claim_run_dir(run, s2, spec)  # cosmetic + eval-only changes: resumes
    with pytest.raises(UserError, match=r"\(--seed differs: 0 -> 3\)"):
        claim_run_dir(run, saved(seed=3)[1], spec)
    _, s_beta = saved()
    s_beta["config"]["beta"] = 0.1
    with pytest.raises(UserError, match=r"\(--beta differs: 0.5 -> 0.1\)"):
        claim_run_dir(run, s_beta, spec)
    (run / "eval").mkdir()  # its evaluation has begun
    with pytest.raises(UserError, match="--eval-limit 5 is below 20"):
        claim_run_dir(run, saved(eval_limit=5, eval_tasks=("arith", "arith_ood"))[1], spec)
    with pytest.raises(UserError, match="--eval-tasks drops arith_ood"):
        claim_run_dir(run, saved(eval_limit=20)[1], spec)
    claim_run_dir(run, saved(eval_limit=None, eval_tasks=("arith", "arith_ood"))[1], spec)


def test_eval_stage_reruns_when_its_key_changes(tmp_path):
    """A stage run with a key (the eval options) is skipped only when the key is the same."""
    from dapo_bench.methods.context import RunContext
    from dapo_bench.run import RunOptions

    ctx = RunContext(Path(tmp_path), RunOptions(quiet=True), n_params=10, method="x")
    calls = []

    def work():
        calls.append(1)
        return {"n": len(calls)}

    assert ctx.run_stage("eval.final", work, key={"limit": 10}) == {"n": 1}
    assert ctx.run_stage("eval.final", work, key={"limit": 10}) == {"n": 1}
    assert ctx.run_stage("eval.final", work, key={"limit": 20}) == {"n": 2}
    assert len(calls) == 2


def test_interrupted_stage_keeps_its_seconds(tmp_path):
    """A stage stopped by Ctrl-C and rerun reports the seconds of both attempts."""
    from dapo_bench.methods.context import RunContext
    from dapo_bench.run import RunOptions

    ctx = RunContext(Path(tmp_path), RunOptions(quiet=True), n_params=10, method="x")

    def stopped():
        time.sleep(0.2)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ctx.run_stage("train", stopped)
    assert read_json(tmp_path / "stages" / "train.partial.json")["seconds"] >= 0.2
    ctx.run_stage("train", lambda: time.sleep(0.1))
    assert read_json(tmp_path / "stages" / "train.json")["seconds"] >= 0.3
    assert not (tmp_path / "stages" / "train.partial.json").exists()
