"""``--backend openai`` against a real server: ``transformers serve`` on loopback serving the
shipped arith policy (a real transformers model; generation takes milliseconds), through
``/v1/completions`` with the prompt rendered here. Beside it, a fault-injecting proxy
(``tests/_served.FaultProxy``) for 429, 500, a timeout, a dropped connection and an aborted
answer; a server
killed mid-eval; and the API key, which no file of the run may contain.

The chat endpoint with a real instruct model (SmolLM2) is tests/generation/test_openai_chat.py.
"""

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest
from _park import Parked
from _served import FaultProxy, Served, free_port

from dapo_bench.eval import evaluate
from dapo_bench.generation.base import load_generator
from dapo_bench.io import read_jsonl
from dapo_bench.results import load_results

IN_CI = os.environ.get("CI") == "true"  # there the test must run: no skip hides a lost install
pytestmark = [pytest.mark.integration, pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("fastapi", "openai", "uvicorn"))
    and not IN_CI, reason="transformers serve needs fastapi, openai, uvicorn (the dev extra)")]

LIMIT, TOKENS = 6, 24
COMMON = {"limit": LIMIT, "max_new_tokens": TOKENS, "quiet": True}


def toy() -> str:
    from dapo_bench.tasks import TASKS
    from dapo_bench.tasks.spec import default_model

    return str(default_model(TASKS.get("arith")))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Served(toy(), tmp_path_factory.mktemp("serve") / "serve.log")
    yield s
    s.stop()


def served(url, **kw):
    return load_generator("openai", None, base_url=url, api="completions", **kw)


def texts(run_dir) -> dict:
    return {r["id"]: [s.get("text") for s in r["samples"]]
            for r in read_jsonl(Path(run_dir) / "samples.jsonl")}


@pytest.fixture(scope="module")
def reference(server, tmp_path_factory):
    """One clean eval through the server: (results, texts by problem id)."""
    run = tmp_path_factory.mktemp("ref") / "run"
    gen = served(server.url)
    try:
        res = evaluate(gen, ["arith"], run_dir=run, **COMMON)
    finally:
        gen.close()
    return res, texts(run)


def test_served_equals_in_process_and_records_the_server(server, reference, tmp_path):
    res, got = reference
    hf = evaluate(toy(), ["arith"], run_dir=tmp_path / "hf", **COMMON)
    assert got == texts(tmp_path / "hf")  # greedy, the same prompt text: the same answers
    assert res["tasks"]["arith"]["metrics"] == hf["tasks"]["arith"]["metrics"]
    s = res["server"]
    assert s["base_url"] == server.url and s["api"] == "completions" and s["model"] == toy()
    assert s["models_reported"] == {toy(): LIMIT} and s["prompt_tokens_differ"] == 0
    assert s["requests"]["sent"] == LIMIT and s["requests"]["failed"] == {}
    t = res["tasks"]["arith"]
    assert t["server"]["completion_tokens"] == t["generated_tokens"] > 0
    assert sum(t["server"]["finish_reasons"].values()) == LIMIT
    assert res["backend"] == "openai" and res["model"]["hash"] == f"openai:{toy()}"
    assert res["model"]["n_params"] is None


def test_faults_are_retried_and_counted_and_change_nothing(server, reference, tmp_path):
    proxy = FaultProxy(server.url, plan=["429", "500", "slow", "drop", "abort"])
    gen = served(proxy.url, concurrency=2, timeout=10, max_retries=3, backoff=0.05)
    try:
        res = evaluate(gen, ["arith"], run_dir=tmp_path / "r", **COMMON)
    finally:
        gen.close()
        proxy.close()
    assert texts(tmp_path / "r") == reference[1]
    assert res["tasks"]["arith"]["metrics"] == reference[0]["tasks"]["arith"]["metrics"]
    assert "infra_errors" not in res["tasks"]["arith"]
    assert proxy.faults == {"429": 1, "500": 1, "slow": 1, "drop": 1, "abort": 1}
    retried = res["server"]["requests"]["retried"]
    assert retried["http_429"] == 1 and retried["http_500"] == 1 and retried["dropped"] == 1
    assert retried["aborted"] == 1
    assert retried["timeout"] >= 1 and res["server"]["requests"]["failed"] == {}


def test_a_request_that_fails_for_good_is_left_out_then_sent_again(server, reference, tmp_path):
    proxy = FaultProxy(server.url, plan=["fail"])  # the first request fails on every try
    gen = served(proxy.url, concurrency=1, max_retries=1, backoff=0.01)
    try:
        res = evaluate(gen, ["arith"], run_dir=tmp_path / "r", **COMMON)["tasks"]["arith"]
    finally:
        gen.close()
        proxy.close()
    assert res["infra_errors"]["problems"] == 1 and res["infra_errors"]["reasons"] == [
        "generation_error"]
    lost = res["infra_errors"]["ids"][0]
    assert res["n_problems"] == LIMIT - 1  # left out, not scored 0
    ref = reference[0]["tasks"]["arith"]
    rows = {r["id"]: r for r in read_jsonl(tmp_path / "r" / "samples.jsonl")}
    assert rows[lost]["samples"][0]["error"].startswith("http_500")
    passed = sum(r["samples"][0]["passed"] for r in rows.values())
    assert res["metrics"]["acc"]["value"] == pytest.approx(passed / (LIMIT - 1))
    gen = served(server.url)  # the rerun, straight to the server: only the missing request
    try:
        again = evaluate(gen, ["arith"], run_dir=tmp_path / "r", **COMMON)
    finally:
        gen.close()
    assert again["server"]["requests"]["sent"] == 1
    assert again["tasks"]["arith"]["metrics"] == ref["metrics"]
    assert texts(tmp_path / "r") == reference[1]


def test_the_key_is_sent_and_never_written(server, cli, tmp_path, monkeypatch):
    key = "sk-test-7f3a9c0e-never-in-a-file"
    proxy = FaultProxy(server.url, key=key)
    args = ["eval", "--tasks", "arith", "--limit", "2", "--max-new-tokens", "8", "--backend",
            "openai", "--api", "completions", "--base-url", proxy.url, "--out", tmp_path,
            "--quiet"]
    try:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        code, err = cli(args)  # no key: the server says 401, a one-line error naming the flag
        assert code == 2 and err.startswith("error: --api-key-env: the server at ")
        assert not any(tmp_path.iterdir())  # refused before anything was written
        monkeypatch.setenv("MY_KEY", key)
        code, err = cli([*args, "--api-key-env", "MY_KEY"])
        assert code == 0, err
    finally:
        proxy.close()
    files = [f for f in tmp_path.rglob("*") if f.is_file()]
    assert {f.name for f in files} >= {"results.json", "samples.jsonl", "responses.jsonl",
                                        "eval_config.json"}
    assert not [f for f in files if key.encode() in f.read_bytes()]
    monkeypatch.delenv("MY_KEY")
    code, err = cli([*args, "--api-key-env", "MY_KEY"])
    assert code == 2 and err.strip() == ("error: --api-key-env MY_KEY: the environment "
                                         "variable is not set")


def test_user_errors_name_the_flag(server, cli, tmp_path):
    base = ["eval", "--tasks", "arith", "--limit", "1", "--out", tmp_path, "--quiet"]
    nobody = f"http://127.0.0.1:{free_port()}/v1"
    cases = [
        (["--backend", "openai", "--base-url", nobody],
         f"error: --base-url {nobody}: cannot reach the server"),
        (["--backend", "openai", "--base-url", "localhost:8000"], "error: --base-url "),
        (["--backend", "openai", "--base-url", server.url, "--model", "nope"],
         f"error: --model 'nope': the server at {server.url} serves {toy()}"),
        (["--backend", "openai", "--base-url", server.url, "--extra-body", "{x"],
         "error: --extra-body: not valid JSON"),
        (["--backend", "openai", "--base-url", server.url, "--concurrency", "0"],
         "error: --concurrency must be at least 1"),
        (["--base-url", server.url], "error: --base-url is an option of --backend openai"),
        (["--backend", "openai", "--base-url", server.url],  # chat, but arith is raw text
         "error: task arith: its prompt is raw text, not a chat"),
    ]
    for extra, start in cases:
        code, err = cli([*base, *extra])
        assert code == 2 and err.startswith(start) and err.count("\n") == 1, (extra, err)
    code, err = cli(["train", "--method", "sft", "--backend", "openai", "--out", tmp_path])
    assert code == 2 and err.startswith("error: --backend openai: training trains on the "
                                        "token ids it samples")


def test_a_server_killed_mid_eval_then_the_rerun_finishes(server, reference, cli, tmp_path):
    """The server dies after the run logged 2 answers (the run parked there, no race): the run
    stops with one line and keeps the answers; the rerun, against another server of the same
    model (another port: the run id does not change), sends only the rest."""
    first = Served(toy(), tmp_path / "serve1.log")

    def argv(url):
        return ["eval", "--tasks", "arith", "--limit", str(LIMIT), "--max-new-tokens",
                str(TOKENS), "--backend", "openai", "--api", "completions", "--base-url", url,
                "--concurrency", "1", "--max-retries", "1", "--out", str(tmp_path), "--run-id",
                "k", "--quiet"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    child = Parked(["-m", "dapo_bench.cli", *argv(first.url)], "responses.jsonl", 2, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert child.wait_parked(), child.proc.stderr.read().decode()[-2000:]
        first.stop()  # SIGKILL, by its pid
        child.proc.stdin.write(b"g")
        child.proc.stdin.close()
        err = child.proc.stderr.read().decode()
        assert child.proc.wait() == 3, err
    finally:
        child.close()
        first.stop()
    assert err.strip().splitlines()[-1].startswith(
        f"stopped: the server at {first.url} stopped answering (cannot connect")
    assert len(read_jsonl(tmp_path / "k" / "responses.jsonl")) == 2
    assert not (tmp_path / "k" / "results.json").exists()
    code, err = cli(argv(server.url))
    assert code == 0, err
    res = load_results(tmp_path / "k" / "results.json")
    assert res["server"]["requests"]["from_log"] == 2
    assert res["server"]["requests"]["sent"] == LIMIT - 2
    assert texts(tmp_path / "k") == reference[1]
    assert res["tasks"]["arith"]["metrics"] == reference[0]["tasks"]["arith"]["metrics"]
    assert json.loads((tmp_path / "k" / "eval_config.json").read_text())["backend"] == "openai"
