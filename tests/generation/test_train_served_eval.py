"""``train --eval-serve CMD``: a training run's evaluations through a server that dapo-bench
starts for each evaluated policy (``generation.launched``), here ``transformers serve {model}``
on loopback, a real server, serving the shipped arith policy and the policy the run trained.

The same run is evaluated in process first and then, rerun with ``--eval-serve`` (an eval
option: training is not redone), through the servers; greedy, so the two evaluations must agree
response for response; a server that exits before it answers stops the run with its log's
last lines, and the rerun with a working one finishes it. A template with no ``{port}`` is a
one-line error before anything is written.
"""

import importlib.util
import json
import os
import shlex
import sys

import pytest

from dapo_bench.io import read_jsonl

IN_CI = os.environ.get("CI") == "true"
pytestmark = [pytest.mark.integration, pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("fastapi", "openai", "uvicorn"))
    and not IN_CI, reason="transformers serve needs fastapi, openai, uvicorn (the dev extra)")]

SERVE = (f"OMP_NUM_THREADS=1 {shlex.quote(sys.executable)} -m transformers.cli.transformers "
         "serve {model} --host 127.0.0.1 --port {port} --device cpu")
TRAIN = ["train", "--method", "sft", "--no-control", "--eval-limit", "6",
         "--eval-max-new-tokens", "24", "--run-id", "r", "--quiet", "--set", "epochs=0.05"]


def samples(eval_dir) -> dict:
    return {(r["task"], r["id"]): [s["text"] for s in r["samples"]]
            for r in read_jsonl(eval_dir / "samples.jsonl")}


def test_served_evaluations_equal_in_process_ones(cli, tmp_path):
    code, err = cli([*TRAIN, "--out", tmp_path])
    assert code == 0, err
    run = tmp_path / "r"
    local = json.loads((run / "results.json").read_text())["evals"]
    # a server that exits before it answers stops the run, its log's last lines in the message
    code, err = cli([*TRAIN, "--out", tmp_path, "--eval-serve",
                     "echo no GPU here >&2; exit 7 # {port}"])
    last = err.strip().splitlines()[-1]
    assert code == 3 and last.startswith("stopped: --eval-serve: the server exited with 7 "
                                         "before it answered (") and "no GPU here" in last
    code, err = cli([*TRAIN, "--out", tmp_path, "--eval-serve", SERVE])  # evals only
    assert code == 0, err
    served = json.loads((run / "results.json").read_text())["evals"]
    assert set(served) == set(local) == {"reference", "final"}
    assert served == local
    for label in ("reference", "final"):
        here, there = run / "eval" / label, run / "eval" / f"{label}-served"
        assert samples(there) == samples(here)
        res = json.loads((there / "results.json").read_text())
        server = res["server"]
        assert res["backend"] == "openai" and server["api"] == "completions"
        assert server["requests"]["failed"] == {} and server["prompt_tokens_differ"] == 0
        log = (there / "server.rank0.log").read_text()
        assert f"$ OMP_NUM_THREADS=1 {shlex.quote(sys.executable)} -m transformers" in log
        assert "Application shutdown complete" in log  # SIGTERM: it shut down, not killed
    final = json.loads((run / "results.json").read_text())["model"]["path"]
    assert json.loads((run / "eval" / "final-served" / "results.json").read_text())[
        "model"]["path"] == final  # the trained policy, asked for by its directory


def test_a_bad_template_is_one_line_and_writes_nothing(cli, tmp_path):
    code, err = cli([*TRAIN, "--out", tmp_path, "--eval-serve", "vllm serve {model}"])
    assert code == 2 and err.startswith("error: --eval-serve 'vllm serve {model}': the "
                                        "command must name {port}") and err.count("\n") == 1
    code, err = cli([*TRAIN, "--out", tmp_path, "--eval-serve", "x --port {port} {gpu}"])
    assert code == 2 and err.startswith("error: --eval-serve 'x --port {port} {gpu}': bad "
                                        "placeholder 'gpu'")
    assert not tmp_path.exists() or not any(tmp_path.iterdir())
