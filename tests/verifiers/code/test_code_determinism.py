"""The code verifier gives one verdict for one input, on every run: a set keeps its iteration
order across the proxy, the interpreters that run candidates hash with PYTHONHASHSEED=0, and a
program compiles as plain Python (no ``from __future__`` of the verifier's leaks into it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from dapo_bench.verifiers.code import CodeVerifier, Limits
from dapo_bench.verifiers.code.values import ordered_set, pack, unpack

WORDS = ["apple", "banana", "cherry", "date", "elderberry", "fig", "grape", "kiwi", "lemon"]
# A set that was bigger: its table keeps the size, so {7, 9} iterates 7, 9 where a fresh
# set([7, 9]) iterates 9, 7 (9 and 1 share a slot of 8).
SHRUNK = "s = set(range(10))\nfor i in range(10):\n    if i not in (7, 9):\n        s.discard(i)\n"
TO_TUPLE = "def to_tuple(s):\n    return tuple(s)\n"


@pytest.fixture(scope="module")
def cv():
    v = CodeVerifier(limits=Limits(time_s=5.0), workers=1)
    yield v
    v.close()


def one_process(code: str) -> str:
    """What ``code`` prints run by a plain interpreter with PYTHONHASHSEED=0."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env=env).stdout


def test_a_set_crosses_the_proxy_in_its_own_order():
    ns: dict = {}
    exec(SHRUNK, ns)  # noqa: S102 - the set a test's setup code builds
    assert list(ns["s"]) == [7, 9] and list(set([7, 9])) == [9, 7]  # noqa: C405
    assert list(unpack(pack(ns["s"]))) == [7, 9]
    for s in (ns["s"], {7, 9, 15, 23}, set(WORDS), {(1, 2), (9, 1), (17, 3)}):
        assert list(ordered_set(list(s))) == list(s) and ordered_set(list(s)) == s


def test_a_set_argument_iterates_as_in_one_process(cv):
    """MBPP-style: the checker builds the set, the program iterates it. One process: the
    program's tuple(s) is the checker's tuple(s) (pass) and not (9, 7) (fail)."""
    same = {"test_setup_code": SHRUNK, "test_list": ["assert to_tuple(s) == tuple(s)"]}
    other = {"test_setup_code": SHRUNK, "test_list": ["assert to_tuple(s) == (9, 7)"]}
    assert cv.verify(TO_TUPLE, same).reason == "ok"
    assert cv.verify(TO_TUPLE, other).reason == "wrong_answer"


def test_candidates_hash_with_seed_zero(cv):
    code = f"print(hash('abc'))\nprint(list(set({WORDS!r})))\n"
    expected = one_process(code)
    assert cv.verify(code, {"inputs": [""], "outputs": [expected]}).reason == "ok"
    check = f"assert f() == {expected.splitlines()[1]}"
    assert cv.verify(f"def f():\n    return list(set({WORDS!r}))\n",
                     {"test_list": [check]}).reason == "ok"


def test_an_undefined_name_in_an_annotation_raises_as_in_plain_python(cv):
    stdio = cv.verify("x: Undefined = 1\nprint(x)\n", {"inputs": [""], "outputs": ["1\n"]})
    assert stdio.reason == "runtime_error"
    assert "NameError" in stdio.details["first_failure"]["error"]
    fn = "def f(x: Undefined) -> int:\n    return x\n"
    assert cv.verify(fn, {"test_list": ["assert f(1) == 1"]}).reason == "runtime_error"
    assert cv.verify(fn, {"inputs": [[1]], "outputs": [1], "fn_name": "f"}).reason == \
        "runtime_error"
    ok = "from __future__ import annotations\ndef f(x: Undefined) -> int:\n    return x\n"
    assert cv.verify(ok, {"test_list": ["assert f(1) == 1"]}).reason == "ok"


def test_two_cli_runs_give_identical_verdicts(tmp_path):
    """`dapo-bench verify --verifier code` twice over programs whose output hangs on set order
    and on str hashing: the same verdicts, and the ones one process with seed 0 gives."""
    printer = f"print(list(set({WORDS!r})))\n"
    rows = [
        {"program": printer, "tests": {"inputs": [""], "outputs": [one_process(printer)]}},
        {"program": printer, "tests": {"inputs": [""], "outputs": [repr(WORDS) + "\n"]}},
        {"program": TO_TUPLE, "tests": {"test_setup_code": SHRUNK,
                                        "test_list": ["assert to_tuple(s) == tuple(s)"]}},
        {"program": TO_TUPLE, "tests": {"test_setup_code": SHRUNK,
                                        "test_list": ["assert to_tuple(s) == (9, 7)"]}},
        {"program": "def f():\n    return hash('abc') % 2\n",
         "tests": {"test_list": [f"assert f() == {hash_abc_mod2()}"]}},
    ]
    src = tmp_path / "programs.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    runs = []
    for k in range(2):
        out = tmp_path / f"v{k}.jsonl"
        subprocess.run([sys.executable, "-m", "dapo_bench.cli", "verify", str(src), "--verifier",
                        "code", "--workers", "1", "--out", str(out)], check=True,
                       capture_output=True, timeout=300)
        runs.append([(r["passed"], r["reason"], r["details"]["statuses"])
                     for r in map(json.loads, out.read_text().splitlines())])
    assert runs[0] == runs[1]
    assert [p for p, _, _ in runs[0]] == [True, False, True, False, True]


def hash_abc_mod2() -> int:
    return int(one_process("print(hash('abc') % 2)"))
