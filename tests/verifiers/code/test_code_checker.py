"""Assert-based tests through the checker process and its proxies, with benign programs and
test code: what crosses (plain values, handles, arguments sent back), and each verdict reason
that is never a pass (no_tests, unsupported_test, bad_reply, checker_crashed, bad_test).
(Programs that attack the checker: test_sandbox_forge.py.)"""

from __future__ import annotations

import os
import select
import time

import pytest
from dapo_bench.verifiers.code import CodeVerifier, Limits
from dapo_bench.verifiers.code.pool import BadReply, _Worker

LIM = Limits(time_s=2.0)


@pytest.fixture(scope="module")
def cv():
    v = CodeVerifier(limits=LIM, workers=2)
    yield v
    v.close()


def _first(v) -> tuple[str, str]:
    f = v.details["first_failure"] or {}
    return v.reason, f.get("error", "")


def test_values_keep_their_types_across(cv):
    prog = "def f(x):\n    return (x, {x: [1.5, None]}, {b'a'}, frozenset(), 1j)\n"
    tests = {"test_list": ["assert f(2) == (2, {2: [1.5, None]}, {b'a'}, frozenset(), 1j)",
                           "assert type(f(2)) is tuple and type(f(2)[2]) is set"]}
    assert cv.verify(prog, tests).passed
    assert cv.verify(prog.replace("(x, ", "[x, ").replace("1j)", "1j]"), tests).reason == \
        "wrong_answer"  # a list is not the tuple the test wants


def test_exceptions_of_the_program_reach_the_test(cv):
    prog = "def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n"
    test = ("def check(candidate):\n    try:\n        candidate(-1)\n        assert False\n"
            "    except ValueError:\n        pass\n    assert candidate(3) == 3\n")
    assert cv.verify(prog, {"test": test, "entry_point": "f"}).passed
    reason, err = _first(cv.verify("def f(x):\n    return 1 / 0\n",
                                   {"test_list": ["assert f(1) == 1"]}))
    assert reason == "runtime_error" and "ZeroDivisionError" in err


def test_mutation_is_sent_back(cv):
    tests = {"test_list": ["x = [3, 1, 2]\nf(x)\nassert x == [1, 2, 3]",
                           "d = {}\nf(d)\nassert d == {'k': 1}"]}
    prog = ("def f(x):\n    if isinstance(x, list):\n        x.sort()\n    else:\n"
            "        x['k'] = 1\n")
    assert cv.verify(prog, tests).passed
    assert cv.verify("def f(x):\n    return sorted(x)\n", tests).reason == "wrong_answer"
    lc = {"functional": "def check(candidate):\n    nums = [0, 1, 0]\n    candidate(nums=nums)\n"
                        "    assert nums == [1, 0, 0]\n\ncheck(Solution().moveZeroes)"}
    sol = ("class Solution:\n    def moveZeroes(self, nums: List[int]) -> None:\n"
           "        nums.sort(reverse=True)\n")
    assert cv.verify(sol, lc).passed


def test_objects_of_the_program_travel_as_handles(cv):
    prog = ("class Pair:\n    def __init__(self, a, b):\n        self.a, self.b = a, b\n"
            "def longest(ps):\n    return sum(p.b - p.a for p in ps)\n")
    tests = {"test_list": ["assert longest([Pair(1, 3), Pair(5, 6)]) == 3",
                           "assert Pair(1, 2).b == 2"]}
    assert cv.verify(prog, tests).passed
    eq = "class E:\n    def __eq__(self, o):\n        return True\ndef f(x):\n    return E()\n"
    assert cv.verify(eq, {"test_list": ["assert f(1) == 2"]}).reason == "wrong_answer"


def test_humaneval_helpers_come_from_the_prompt(cv):
    prompt = "def poly(xs, x):\n    return sum(c * x ** i for i, c in enumerate(xs))\n\n" \
             "def root(xs):\n    \"\"\"A zero of poly.\"\"\"\n"
    test = "def check(candidate):\n    assert abs(poly([-2, 1], candidate([-2, 1]))) < 1e-9\n"
    good = prompt + "    return 2.0\n"
    lying = "def poly(xs, x):\n    return 0\n\ndef root(xs):\n    return 7.0\n"
    he = {"test": test, "entry_point": "root", "prompt": prompt}
    assert cv.verify(good, he).passed
    assert cv.verify(lying, he).reason == "wrong_answer"  # the prompt's poly, not the program's


def test_no_tests(cv):
    assert cv.verify("x = 1", {"inputs": [], "outputs": []}).reason == "no_tests"
    assert cv.verify("def f(x):\n    return x\n", {"test_list": ["f(1)"]}).reason == "no_tests"
    he = {"test": "def check(candidate):\n    assert True\n", "entry_point": "f"}
    assert _first(cv.verify("def f(x):\n    return x\n", he)) == \
        ("no_tests", "the checks never called the program")


def test_unsupported_test(cv):
    prog = "def f(g, x):\n    return g(x)\n"
    v = cv.verify(prog, {"test_list": ["assert f(lambda y: y + 1, 1) == 2"]})
    assert v.reason == "unsupported_test" and "callable_arg" in _first(v)[1]
    v = cv.verify(prog, {"test_list": ["g = abs\nassert f(g, -1) == 1"]})  # found at run time
    assert v.reason == "unsupported_test"
    v = cv.verify("def f(x):\n    return x\n", {"test_list": ["x = [1]\nassert f(x) is x"]})
    assert v.reason == "unsupported_test" and "identity" in _first(v)[1]


def test_bad_reply(cv):
    garbage = ("import os\nfor fd in range(3, 64):\n    try:\n"
               "        os.write(fd, b'\\xff\\xff\\xff\\x7f' + b'x' * 64)\n"
               "    except OSError:\n        pass\n")
    tests = {"test_list": ["assert f(1) == 1"]}
    assert cv.verify(garbage + "def f(x):\n    return x\n", tests).reason == "bad_reply"
    forged = ("import os\nfrom dapo_bench.verifiers.code import wire\n"
              "def f(x):\n    for fd in range(3, 64):\n        try:\n"
              "            os.write(fd, wire.encode({'v': {'zz': 1}}))\n"
              "        except OSError:\n            pass\n    return x\n")
    assert cv.verify(forged, tests).reason == "bad_reply"  # not a packed value
    small = CodeVerifier(limits=Limits(time_s=2.0, output_mb=1.0), workers=1)
    try:
        v = small.verify("def f(x):\n    return 'x' * (2 * 1024 * 1024)\n", tests)
        assert v.reason == "bad_reply" and "limit" in _first(v)[1]
    finally:
        small.close()


@pytest.mark.parametrize("frame", [b"\x05\x00\x00\x00{nope", b"\x00\x00\x30\x00" + b"x" * 64])
def test_stdin_and_call_reports_that_do_not_decode_are_bad_reply(cv, frame):
    write = ("import os\nfor fd in range(3, 64):\n    try:\n"
             f"        os.write(fd, {frame!r})\n    except OSError:\n        pass\n")
    v = cv.verify(write + "print(3)\n", {"inputs": ["\\n"], "outputs": ["3\\n"]})
    assert v.reason == "bad_reply", v
    v = cv.verify(write + "def f(x):\n    return x\n", {"inputs": [[1]], "outputs": [1],
                                                       "fn_name": "f"})
    assert v.reason == "bad_reply", v


def test_worker_reply_that_does_not_decode_is_bad_reply():
    r, w = os.pipe()
    os.write(w, b"\x05\x00\x00\x00{nope")
    os.close(w)
    worker = object.__new__(_Worker)
    worker.proc = type("P", (), {"stdout": os.fdopen(r, "rb"), "poll": lambda self: None})()
    with pytest.raises(BadReply):
        worker._recv(time.monotonic() + 5)
    worker.proc.stdout.close()


def test_checker_crashed_and_bad_test(cv):
    crash = {"test_list": [("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"
                            "assert f(1) == 1")]}
    assert cv.verify("def f(x):\n    return x\n", crash).reason == "checker_crashed"
    assert cv.verify("def f(x):\n    return x\n", {"test_list": ["assert f(1) =="]}).reason \
        == "bad_test"


def test_program_death_is_judged(cv):
    tests = {"test_list": ["assert f(1) == 1"]}
    reason, err = _first(cv.verify("def f(x):\n    import os\n    os._exit(0)\n", tests))
    assert reason == "runtime_error" and "program process exited" in err
    fast = CodeVerifier(limits=Limits(time_s=1.0, wall_s=6.0), workers=1)
    try:
        v = fast.verify("def f(x):\n    while True:\n        pass\n", tests)
        assert v.reason == "time_limit", v
    finally:
        fast.close()


def test_a_worker_whose_zygote_died_is_replaced():
    """A new zygote forked late would hold earlier jobs' test code: the worker exits instead,
    and the pool starts a fresh one before the next job."""
    one = CodeVerifier(limits=LIM, workers=1)
    tests = {"test_list": ["assert f(1) == 1"]}
    try:
        assert one.verify("def f(x):\n    return x\n", tests).passed
        worker = one._get().pool._workers[0].proc.pid
        with open(f"/proc/{worker}/task/{worker}/children") as f:
            zygote = int(f.read().split()[0])  # forked first, at start-up
        gone = os.pidfd_open(zygote)  # readable once the zygote has died: no sleep to guess
        try:
            os.kill(zygote, 9)
            assert select.select([gone], [], [], 60)[0]
        finally:
            os.close(gone)
        assert one.verify("def f(x):\n    return x\n", tests).reason == "sandbox_error"
        v = one.verify("def f(x):\n    return x\n", tests)
        assert v.passed, v
        assert one._get().pool._workers[0].proc.pid != worker
    finally:
        one.close()
