"""Reference solutions of ../shared/data/code pass in the sandbox (>= 99% of each set; known
exceptions: none at present), and a solution run against another problem's tests never passes.

The full sweeps (HumanEval 164, MBPP 399, LeetCode 200, 200 shuffled pairs) are marked ``slow``;
the default suite runs a fixed sample of each. Skips when the shared data folder is absent.
"""

from __future__ import annotations

import random

import pytest
from _data import DATA as SHARED_DATA
from _data import code_references
from dapo_bench.verifiers.code import Limits, run_tests_batch

DATA = SHARED_DATA / "code"
# One MBPP reference (#71, amicable numbers) needs ~2.5 s of CPU per check; CPU time is the
# limit, the wall clock only a backstop (on a loaded shared machine 17 s was not enough).
LIM = Limits(time_s=8.0, wall_s=60.0)
KNOWN_EXCEPTIONS: dict[str, set[int]] = {"humaneval": set(), "mbpp": set(), "leetcode": set()}
SLOW_REFERENCES = {"mbpp": {71}}  # kept out of the default sample (seconds of CPU)

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"{DATA} absent (shared benchmark data)")


def _check_references(name: str, sample: int | None) -> None:
    programs, tests = code_references(name)
    idx = list(range(len(programs)))
    if sample is not None:
        idx = [i for i in idx if i not in SLOW_REFERENCES.get(name, ())]
        idx = sorted(random.Random(0).sample(idx, sample))
    verdicts = run_tests_batch([programs[i] for i in idx], [tests[i] for i in idx], LIM)
    failed = {i: v.details["first_failure"] for i, v in zip(idx, verdicts) if not v.passed}
    unexpected = {i: f for i, f in failed.items() if i not in KNOWN_EXCEPTIONS[name]}
    assert not unexpected, f"{name}: reference solutions failed: {unexpected}"
    assert len(idx) - len(failed) >= 0.99 * len(idx)


def _check_no_false_pass(n_pairs: int) -> None:
    rng = random.Random(1)
    pools = {name: code_references(name) for name in ("humaneval", "mbpp", "leetcode")}
    programs, tests = [], []
    for _ in range(n_pairs):
        name = rng.choice(sorted(pools))
        progs, tsts = pools[name]
        i, j = rng.sample(range(len(progs)), 2)
        programs.append(progs[i])
        tests.append(tsts[j])
    verdicts = run_tests_batch(programs, tests, Limits(time_s=3.0))
    passed = [k for k, v in enumerate(verdicts) if v.passed]
    assert passed == [], f"solutions passed another problem's tests: {passed}"


@pytest.mark.parametrize("name", ["humaneval", "mbpp", "leetcode"])
def test_reference_solutions_sample(name):
    _check_references(name, sample=25)


def test_no_false_pass_sample():
    _check_no_false_pass(40)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["humaneval", "mbpp", "leetcode"])
def test_reference_solutions_all(name):
    _check_references(name, sample=None)


@pytest.mark.slow
def test_no_false_pass_200_pairs():
    _check_no_false_pass(200)
