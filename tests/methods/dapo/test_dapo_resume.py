"""DAPO end to end on a tiny in-process model: a run killed in the middle of stage 3 (MC
labels) resumes without redoing finished states and gives the same artifacts as an
uninterrupted run; the trained policy directory loads with transformers; results.json holds
the ledger per stage, the critic's calibration and the per-iteration records; a 2-iteration
run reads the policy from disk twice in all (``models.LOADS``), not at every stage."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _park import Parked

from dapo_bench.io import read_jsonl

pytestmark = pytest.mark.integration  # launches processes, trains or kills runs (conftest)

SETS = ["n_problems=12", "n_samples=2", "n_rollouts=2", "mc_samples=4", "max_new_tokens=12",
        "gen_chunk=1", "critic.epochs=1", "actor.epochs=1"]


def _cli(model_dir: str, out: Path, run_id: str) -> list[str]:
    args = [sys.executable, "-m", "dapo_bench.cli", "train", "--method", "dapo",
            "--model", model_dir, "--preset", "toy", "--out", str(out), "--run-id", run_id,
            "--eval-limit", "3", "--eval-max-new-tokens", "6", "--no-control", "--quiet"]
    for s in SETS:
        args += ["--set", s]
    return args


def _mc_rows(path: Path) -> list[dict]:
    return sorted(read_jsonl(path), key=lambda r: r["key"])


def test_kill_in_stage_3_resumes_and_matches_uninterrupted_run(model_dir, tmp_path):
    from dapo_bench.run import RunOptions, run_training

    # 1. the uninterrupted reference run, in process
    res = run_training("dapo", RunOptions(
        model=model_dir, eval_limit=3, eval_max_new_tokens=6, control=False,
        out=str(tmp_path), run_id="whole", quiet=True), preset="toy", overrides=SETS)
    whole = tmp_path / "whole" / "it1"

    # 2. the same run as a subprocess, killed while stage 3 is half done: it parks after its
    #    2nd MC row (no race against a fast machine)
    run = tmp_path / "killed"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    child = Parked(_cli(model_dir, tmp_path, "killed")[1:], "mc.jsonl", 2, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert child.wait_parked(), "the run ended before stage 3 could be interrupted"
    finally:
        child.close()
    mc, marker = run / "it1" / "mc.jsonl", run / "stages" / "it1.mc.json"
    assert not marker.exists(), "stage 3 had already finished when killed"
    n_total = len(read_jsonl(whole / "mc.jsonl"))
    before = mc.read_bytes()
    done_before = before[: before.rfind(b"\n") + 1]
    assert 2 <= done_before.count(b"\n") < n_total

    # 3. rerun: finishes, keeps the finished states' lines as they were, adds the rest once
    out = subprocess.run(_cli(model_dir, tmp_path, "killed"), env=env, capture_output=True,
                         text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "stage it1.rollouts: done before, skipped" in out.stderr
    after = mc.read_bytes()
    assert after.startswith(done_before)
    rows = read_jsonl(mc)
    assert len(rows) == len({r["key"] for r in rows}) == n_total
    for name in ("rollouts.jsonl", "states.jsonl"):
        assert (run / "it1" / name).read_bytes() == (whole / name).read_bytes()
    assert _mc_rows(mc) == _mc_rows(whole / "mc.jsonl")
    # MC labels are the fraction of accepted completions
    assert all(r["value"] == sum(c["reward"] for c in r["completions"]) / 4 for r in rows)

    # 4. the results: same ledger as the uninterrupted run for the data stages
    res2 = json.loads((run / "results.json").read_text())
    for st in ("it1.rollouts", "it1.mc"):
        assert res2["ledger"]["stages"][st] == res["ledger"]["stages"][st]
    assert res["method"] == "dapo" and res["kind"] == "train"
    # every stage ran; the toy preset's "mc" estimator does no compute in stage B (no critic
    # scoring), and this random tiny policy's all-wrong completions leave the actor no state
    assert {p.stem for p in (run / "stages").glob("it1.*.json")} == {
        "it1.rollouts", "it1.states", "it1.mc", "it1.critic", "it1.advantages", "it1.actor"}
    assert set(res["ledger"]["stages"]) >= {"it1.rollouts", "it1.mc", "it1.critic"}
    adv = json.loads((run / "stages" / "it1.advantages.json").read_text())["info"]
    assert adv["estimator"] == "mc" and adv["scored_actions"] == 0
    # FLOPs = 2 N (N_inf + 3 N_train) per stage, N that stage's model (the critic's ValueModel
    # has a value head, not the LM head: it is charged at its own size)
    led = res["ledger"]
    per_stage = {k: 2 * s.get("n_params", led["n_params"]) * (s["n_inf"] + 3 * s["n_train"])
                 for k, s in led["stages"].items()}
    assert led["stages"]["it1.critic"]["n_params"] != led["n_params"]
    assert all(led["stages"][k]["flops"] == pytest.approx(v) for k, v in per_stage.items())
    assert led["flops"] == pytest.approx(sum(per_stage.values()))
    assert {"brier", "ece", "bins"} <= set(res["critic"]["heldout"])
    assert res["iterations"][0]["iteration"] == 1 and "arith" in res["tasks"]
    assert set(res["comparison"]["final_vs_reference"]) == {"arith", "arith_ood"}


def test_trained_policy_dir_loads_with_transformers(model_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from dapo_bench import models
    from dapo_bench.run import RunOptions, run_training

    before = models.LOADS.copy()
    res = run_training("dapo", RunOptions(
        model=model_dir, eval_limit=2, eval_max_new_tokens=4, control=False,
        out=str(tmp_path), run_id="two", quiet=True), preset="toy",
        overrides=SETS[1:3] + SETS[5:] + ["n_problems=3", "mc_samples=2", "max_new_tokens=8",
                                          "iterations=2", "advantage=critic"])
    # the policy goes from stage to stage in memory: the reference is read when the run
    # starts and again for its own eval (after the last actor); no actor is ever read back
    # (each is trained in place, then sampled from and evaluated as it is)
    loads = {str(Path(k)): v for k, v in (models.LOADS - before).items()}
    assert loads == {str(Path(model_dir)): 2}, loads
    assert [it["iteration"] for it in res["iterations"]] == [1, 2]
    # the paper's estimator: stage B scores V(s + a_i) with the critic (counted in the ledger)
    assert res["iterations"][0]["advantages"]["estimator"] == "critic"
    assert "it1.advantages" in res["ledger"]["stages"]
    assert res["iterations"][1]["reference"].endswith("it1/actor")
    path = res["model"]["path"]
    assert path.endswith("it2/actor")
    model = AutoModelForCausalLM.from_pretrained(path)
    tok = AutoTokenizer.from_pretrained(path)
    ids = tok("12+3\n", return_tensors="pt")["input_ids"]
    out = model.generate(ids, max_new_tokens=3, do_sample=False)
    assert out.shape[1] == ids.shape[1] + 3 or int(out[0, -1]) == tok.eos_token_id
