"""Code verifier end to end with benign programs: verdicts per form, statuses, fail-fast, the
isolation gate, the registry entry and the CLI. (Attacking programs: test_sandbox_hostile.py.)"""

from __future__ import annotations

import json

import pytest
from dapo_bench.verifiers.base import VERIFIERS
from dapo_bench.verifiers.code import CodeVerifier, Limits, check_layers, run_tests
from dapo_bench.verifiers.code.api import _Runner
from dapo_bench.verifiers.code.formats import parse_tests
from typer.testing import CliRunner

from dapo_bench.cli import app
from dapo_bench.errors import UserError

LIM = Limits(time_s=2.0)
ADD = "a, b = map(int, input().split())\nprint(a + b)\n"


@pytest.fixture(scope="module")
def cv():
    v = CodeVerifier(limits=LIM, workers=2)
    yield v
    v.close()


def test_stdio_verdicts(cv):
    tests = {"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "10\n"]}
    v = cv.verify(ADD, tests)
    assert v.passed and v.reason == "ok" and v.details["statuses"] == ["ok", "ok"]
    v = cv.verify(ADD.replace("a + b", "a * b"), tests)
    assert (v.reason, v.details["statuses"]) == ("wrong_answer", ["wrong_answer", "wrong_answer"])
    assert cv.verify("print(1/0)", tests).details["first_failure"]["error"].startswith(
        "ZeroDivisionError")
    v = cv.verify("print(", tests)
    assert v.reason == "runtime_error" and "compile" in v.details["first_failure"]["error"]


def test_exit_codes_and_flushing(cv):
    t = {"inputs": ["\n"], "outputs": ["7\n"]}
    assert cv.verify("import sys, os\nprint(7)\nsys.stdout.flush()\nos._exit(0)", t).passed
    assert cv.verify("print(7)\nexit(0)", t).passed
    assert cv.verify("print(7)\nimport sys\nsys.exit(3)", t).reason == "runtime_error"


def test_fail_fast_skips_the_rest():
    prog = "n = int(input())\nassert n != 2\nprint(n)\n"
    tests = {"inputs": ["1\n", "2\n", "3\n"], "outputs": ["1\n", "2\n", "3\n"]}
    v = run_tests(prog, tests, LIM)
    assert v.details["statuses"] == ["ok", "runtime_error", "skipped"]
    v = run_tests(prog, tests, Limits(time_s=2.0, fail_fast=False))
    assert v.details["statuses"] == ["ok", "runtime_error", "ok"]


def test_call_based(cv):
    taco = {"inputs": [[1, 2], [[1], 3]], "outputs": [[3], [[1, 3]]], "fn_name": "f"}
    prog = "def f(a, b):\n    return a + b if isinstance(a, int) else a + [b]\n"
    assert cv.verify(prog, taco).passed
    cls = "class Solution:\n    def f(self, a, b):\n        return (a + b) if a != 1 else 0\n"
    assert cv.verify(cls, taco).details["statuses"] == ["wrong_answer", "runtime_error"]
    lcb = [{"input": "[3, 1, 2]\n1", "output": "[1, 2, 3]", "testtype": "functional"}]
    sol = "class Solution:\n    def sortIt(self, xs: List[int], k: int) -> List[int]:\n" \
          "        return sorted(xs)\n"
    assert cv.verify(sol, lcb).passed  # method found without fn_name; LeetCode imports given


def test_assert_based(cv):
    he = {"test": "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n",
          "entry_point": "sq"}
    assert cv.verify("def sq(x):\n    return x * x\n", he).passed
    assert cv.verify("def sq(x):\n    return x + 2\n", he).reason == "wrong_answer"
    mbpp = {"test_list": ["assert sq(2) == 4", "assert sq(3) == 9", "assert sq(0) == 0"]}
    v = cv.verify("def sq(x):\n    return x + 2\n", mbpp)
    assert v.details["statuses"] == ["ok", "wrong_answer", "wrong_answer"]
    lc = {"functional": "def check(candidate):\n    assert candidate([1, 2]) == 3\n\n"
                        "check(Solution().total)"}
    sol = "class Solution:\n    def total(self, xs: List[int]) -> int:\n        return sum(xs)\n"
    assert cv.verify(sol, lc).passed


def test_no_isolation_means_sandbox_error():
    r = _Runner(1, landlock=False)
    try:
        assert not r.ok and "write isolation: none" in r.why
        v = r.run([ADD], [parse_tests({"inputs": ["1 2"], "outputs": ["3"]})], LIM)[0]
        assert (v.passed, v.reason) == (False, "sandbox_error")
    finally:
        r.close()


def test_layers_and_registry():
    layers = check_layers()
    assert {"uid", "rlimits", "landlock_fs", "seccomp", "netns"} <= set(layers)
    assert all(isinstance(a, bool) and isinstance(d, str) for a, d in layers.values())
    cls = VERIFIERS.get("code")
    assert cls is CodeVerifier and cls.fields == ("program", "tests")
    with pytest.raises(UserError, match="unknown option"):
        CodeVerifier(mode="x")
    with pytest.raises(UserError, match="programs but"):
        CodeVerifier().verify_batch(["x"], [])


def test_cli_verify_and_sandbox_check(tmp_path):
    rows = [{"program": ADD, "tests": {"inputs": ["1 2\n"], "outputs": ["3\n"]}},
            {"program": ADD, "tests": [{"input": "2 2\n", "output": "5\n"}]}]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    res = CliRunner().invoke(app, ["verify", "--verifier", "code", str(src), "--out", str(out),
                                   "--timeout", "2"])
    assert res.exit_code == 0, res.output
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(g["index"], g["passed"], g["reason"]) for g in got] == \
        [(0, True, "ok"), (1, False, "wrong_answer")]
    res = CliRunner().invoke(app, ["sandbox", "check", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["isolated"] is True
