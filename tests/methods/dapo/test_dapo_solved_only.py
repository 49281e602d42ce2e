"""DAPO ``solved_only``: states (and so MC labels) only from problems that pi_ref solved at
least once in its n1 responses; the problems left out are counted, and a run where none was
solved stops with a one-line error instead of training on nothing."""

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from dapo_bench.io import atomic_write_jsonl, read_jsonl
from dapo_bench.methods.dapo import DapoConfig
from dapo_bench.methods.dapo import stages as st
from dapo_bench.toy.tokenizer import build_char_tokenizer

TOK = build_char_tokenizer()


def _rollouts(d: Path, rewards: dict[str, list[float]]) -> list[SimpleNamespace]:
    rows, problems = [], []
    for pid, rs in rewards.items():
        prompt = f"{pid}: 2+3="
        problems.append(SimpleNamespace(id=pid, prompt=prompt, prompt_ids=TOK.encode(prompt)))
        texts = [f"2+3={4 + i}\n\\boxed{{{4 + i}}}" for i in range(len(rs))]
        rows.append({"key": pid, "problem_id": pid, "responses": [
            {"text": t, "reward": r, "token_ids": TOK.encode(t) + [TOK.eos_token_id],
             "n_tokens": len(t) + 1, "finish_reason": "stop"} for t, r in zip(texts, rs)]})
    atomic_write_jsonl(d / "rollouts.jsonl", rows)
    return problems


def test_states_come_only_from_solved_problems_and_the_others_are_counted(tmp_path):
    problems = _rollouts(tmp_path, {"a": [0.0, 1.0], "b": [0.0, 0.0], "c": [0.0, 0.0],
                                    "d": [1.0, 1.0]})
    ctx = SimpleNamespace(tokenizer=TOK, opts=SimpleNamespace(seed=0))
    every = st.states(ctx, DapoConfig(n_samples=2, n_rollouts=2), problems, tmp_path)
    assert "unsolved_problems" not in every  # the paper's default: every problem
    assert {s["problem_id"] for s in read_jsonl(tmp_path / "states.jsonl")} == set("abcd")
    info = st.states(ctx, DapoConfig(n_samples=2, n_rollouts=2, solved_only=True), problems,
                     tmp_path)
    assert info["unsolved_problems"] == 2
    assert {s["problem_id"] for s in read_jsonl(tmp_path / "states.jsonl")} == {"a", "d"}
    assert info["kept_responses"] == 4 and info["n_states"] < every["n_states"]


def test_a_run_with_no_solved_problem_stops_with_one_line(model_dir, tmp_path):
    # the random-init policy solves nothing: solved_only leaves no state to label
    cmd = [sys.executable, "-m", "dapo_bench.cli", "train", "--method", "dapo", "--model",
           model_dir, "--preset", "toy", "--out", str(tmp_path), "--run-id", "none",
           "--no-control", "--quiet", "--eval-limit", "2"]
    for s in ("n_problems=4", "n_samples=2", "n_rollouts=2", "max_new_tokens=6",
              "solved_only=true"):
        cmd += ["--set", s]
    run = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert "rollouts.jsonl: solved_only, and none of the 4 problems was solved" in last, \
        run.stderr[-2000:]
    assert len(read_jsonl(tmp_path / "none" / "it1" / "rollouts.jsonl")) == 4  # kept
