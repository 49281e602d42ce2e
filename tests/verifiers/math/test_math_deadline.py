"""Every math item answers within its deadline, on every path, whatever the response's size or
shape (tests/degenerate.py: what a collapsing policy writes). Past the deadline the verdict is
``timeout``, an infrastructure outcome: TRL gets None, verl a flag, eval leaves the problem out
and counts it, the server and the CLI say ``timeout``; never a 0.

The paths are tested with a deadline so short (1 us) that every reading passes it at its first
check: the outcome does not depend on the machine's speed. How long the readings take is
bench/verify_math_degenerate.py's business; here only that a 1M-character response of each of
the slowest shapes stops at a 1 s deadline (the quadratic scans it replaced took minutes).
"""

import json
import subprocess
import sys
import time

import pytest
from dapo_bench.verifiers.math import MathVerifier, verify
from degenerate import SHAPES

from dapo_bench.rewards import compute_score, make_math_reward

TINY = 1e-6  # seconds: every item passes it at the deadline's first check
CLI = [sys.executable, "-m", "dapo_bench.cli"]
SLOW = ("dollars", "open_dollar", "dollar_pad", "paren_math_lines", "list", "plus_zero")


@pytest.fixture(scope="module")
def verifier():
    v = MathVerifier(workers=1)
    yield v
    v.close()


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_is_read_at_100k(verifier, shape):
    """At 100K characters every shape gets a verdict on the answer (well inside the default
    5 s), never a crash or a ``too_large`` of the whole response."""
    v = verifier.verify(SHAPES[shape](100_000), "42")
    assert v.reason != "timeout" and v.details["answer_from"], v
    assert v.reason != "too_large" or v.extracted, v  # too large: the answer, not the response


@pytest.mark.parametrize("shape", SLOW)
def test_a_million_characters_stop_at_the_deadline(shape):
    text = SHAPES[shape](1_000_000)
    t0 = time.perf_counter()
    v = verify(text, "42", timeout=1.0)
    took = time.perf_counter() - t0
    assert took < 1.0 + 4.0, (shape, took, v)  # the check's granularity, on a loaded machine
    assert v.reason != "timeout" or v.infra_error


@pytest.mark.parametrize("n", [130_000, 500_000])
def test_long_reasoning_ending_in_a_box_is_read_whole(verifier, n):
    v = verifier.verify(SHAPES["boxed_reasoning"](n), "42")
    assert (v.passed, v.extracted, v.details["answer_from"]) == (True, "42", "box")
    assert not verifier.verify(SHAPES["boxed_reasoning"](n), "41").passed


def test_in_process_past_the_deadline_is_a_timeout_not_a_zero():
    v = verify(SHAPES["dollars"](100_000), "1", timeout=TINY)
    assert (v.passed, v.reason, v.infra_error) == (False, "timeout", True)
    assert v.details["rule"] == "deadline passed while reading"


def test_trl_reward_past_the_deadline_is_none():
    reward = make_math_reward(timeout=TINY)
    out = reward([SHAPES["list"](100_000), "\\boxed{42}"], answer=["1", "42"])
    assert out[0] is None  # no reward, not a 0 (TRL leaves it out of the group's mean)


def test_verl_compute_score_past_the_deadline_is_flagged():
    got = compute_score("openai/gsm8k", SHAPES["plus_zero"](100_000), "10",
                        math_options={"timeout": TINY})
    assert got["infra_error"] is True and got["reason"] == "timeout" and got["score"] == 0.0


def test_cli_past_the_deadline_says_timeout(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"prediction": SHAPES["dollars"](200_000), "gold": "1"}) + "\n")
    out = subprocess.run([*CLI, "verify", str(src), "--verifier", "math", "--timeout", str(TINY),
                          "--workers", "1"], check=False, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout.splitlines()[0])
    assert (row["passed"], row["reason"]) == (False, "timeout")


def test_eval_past_the_deadline_counts_an_infrastructure_error(tmp_path, monkeypatch):
    from _canned import Oracle

    from dapo_bench.eval import evaluate
    from dapo_bench.tasks import load_task

    task = load_task("arith", limit=3)
    monkeypatch.setitem(task.spec.verifier.options, "timeout", TINY)
    first, *rest = task.problems  # a degenerate response, then two right ones (read in us)
    gen = Oracle({task.prompt(first): SHAPES["paren_math_lines"](100_000),
                  **{task.prompt(p): f"\\boxed{{{p.gold}}}" for p in rest}})
    res = evaluate(gen, [task], run_dir=tmp_path / "r", n=1, quiet=True)["tasks"]["arith"]
    assert res["infra_errors"] == {"problems": 1, "samples": 1, "reasons": ["timeout"],
                                   "ids": [first.id]}
    assert res["n_problems"] == 2 and res["metrics"]["acc"]["value"] == 1.0  # left out, not 0


def test_server_past_the_deadline_is_a_timeout_and_no_reward():
    """/verify answers the reason; /get_reward, whose answer is numbers only, refuses the
    request with 503 (a reward of 0 would be learned from) and says to raise --timeout."""
    from _reward_server import Server

    s = Server("--workers", "1", "--timeout", str(TINY), ready=("math",))  # (no program runs
    # in 1 us: the code sandbox's probe fails, as it says in /health)
    try:
        item = {"prediction": SHAPES["dollars"](90_000), "gold": "1"}
        code, body, _ = s.post("/verify", {"verifier": "math", "items": [item]})
        assert code == 200 and body["results"][0]["reason"] == "timeout", body
        code, body, _ = s.post("/get_reward", {"query": [item["prediction"]], "labels": ["1"]})
        assert code == 503 and "could not be decided within --timeout" in body["error"], body
    finally:
        assert s.stop() == 0
