"""Eval metrics against hand-computed values."""

import math
import random

import pytest

from dapo_bench.eval.metrics import (
    bootstrap_stderr,
    breakdown,
    ks_for,
    maj_at_k,
    paired_bootstrap,
    pass_at_k,
    task_metrics,
)


@pytest.mark.parametrize("n,c,k,expected", [
    (5, 2, 1, 0.4),                      # c/n
    (5, 2, 2, 1 - 3 / 10),               # 1 - C(3,2)/C(5,2)
    (10, 3, 5, 1 - 21 / 252),            # 1 - C(7,5)/C(10,5)
    (4, 0, 2, 0.0),
    (4, 3, 2, 1.0),                      # n - c < k: every 2-subset has a correct sample
    (4, 4, 4, 1.0),
    (8, 1, 8, 1.0),
    (8, 1, 4, 0.5),                      # 1 - C(7,4)/C(8,4) = 1 - 35/70
])
def test_pass_at_k_hand_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_rejects_bad_arguments():
    for n, c, k in [(4, 5, 1), (4, 1, 0), (4, 1, 5)]:
        with pytest.raises(ValueError):
            pass_at_k(n, c, k)


@pytest.mark.parametrize("keys,passed,k,expected", [
    (["a", "b", "a"], [True, False, True], 3, 1.0),       # a wins 2-1 and is right
    (["a", "b", "a"], [True, False, True], 2, 1.0),       # 1-1 tie: a, seen first, wins
    (["b", "a", "a"], [False, True, True], 2, 0.0),       # 1-1 tie: b, seen first, is wrong
    (["b", "b", "a"], [False, False, True], 3, 0.0),      # majority is wrong
    ([None, "a", None], [False, True, False], 3, 1.0),    # no-answer samples do not vote
    ([None, None, None], [False, False, False], 3, 0.0),  # nobody voted
    (["a", "b", "c", "c"], [False, False, True, True], 2, 0.0),  # first 2 only: a wins the tie
    (["x", "y", "y", "x", "y"], [False, True, True, False, True], 5, 1.0),
    (["x", "x", "y", "y"], [True, True, False, False], 4, 1.0),  # 2-2 tie: x seen first
    (["y", "x", "x", "y"], [False, True, True, False], 4, 0.0),  # y reached 2 last, seen first
    ([None, "b", "a"], [False, False, True], 3, 0.0),     # first VOTING sample wins the tie
    (["a", "a", "b"], [False, True, False], 3, 0.0),      # the winner's first sample's verdict
])
def test_maj_at_k_hand_values(keys, passed, k, expected):
    assert maj_at_k(keys, passed, k) == expected


def test_maj_at_2_is_the_first_voting_samples_verdict():
    """With first-seen ties maj@2 is the first voting sample's verdict, so over many problems it
    tracks acc; counting a tie as wrong put maj@2 below acc (issue 33: 82.7% against 87.8%)."""
    rng = random.Random(0)
    accs, majs = [], []
    for _ in range(2000):
        keys = [rng.choice("abc") for _ in range(8)]
        passed = [key == "a" for key in keys]
        assert maj_at_k(keys, passed, 2) == float(passed[0])
        accs.append(sum(passed) / 8)
        majs.append(maj_at_k(keys, passed, 2))
    assert abs(sum(majs) - sum(accs)) / 2000 < 0.03


def test_bootstrap_stderr_matches_analytic_and_is_deterministic():
    values = [0.0, 1.0] * 50  # p = 0.5, N = 100: sqrt(p(1-p)/N) = 0.05
    se = bootstrap_stderr(values, B=4000)
    assert se == pytest.approx(0.05, rel=0.08)
    assert bootstrap_stderr(values, B=4000) == se
    assert bootstrap_stderr([1.0] * 10) == 0.0
    assert bootstrap_stderr([1.0]) is None


def test_paired_bootstrap_hand_cases():
    ids = [str(i) for i in range(100)]
    a = {i: 0.0 for i in ids}
    b = {i: 1.0 for i in ids}
    r = paired_bootstrap(a, b, B=500)
    assert r["diff"] == 1.0 and r["stderr"] == 0.0 and r["p_le_0"] == 0.0 and r["n"] == 100
    b = {i: (1.0 if int(i) < 30 else 0.0) for i in ids}  # diff 0.3, sd(diff)=sqrt(.21)
    r = paired_bootstrap(a, b, B=4000)
    assert r["diff"] == pytest.approx(0.3)
    assert r["stderr"] == pytest.approx(math.sqrt(0.21 / 100), rel=0.1)
    assert r["ci95"][0] < 0.3 < r["ci95"][1]
    # Only shared ids count; a gain that flips sign gives p near 1.
    r = paired_bootstrap(b, {**a, "extra": 1.0}, B=500)
    assert r["n"] == 100 and r["diff"] == pytest.approx(-0.3) and r["p_le_0"] == 1.0
    with pytest.raises(ValueError):
        paired_bootstrap({"a": 1.0}, {"a": 0.0})


def test_task_metrics_by_hand():
    # Two problems, n = 4. Problem 1: 2 correct (answers 5,5,7,5 -> majority 5, correct).
    # Problem 2: 0 correct (answers 1,2,None,3 -> no majority).
    passed = [[True, True, False, True], [False, False, False, False]]
    keys = [["5", "5", "7", "5"], ["1", "2", None, "3"]]
    m = task_metrics(passed, keys, ["acc", "pass@k", "maj@k"], B=200)
    assert m["acc"]["value"] == pytest.approx((3 / 4 + 0) / 2)
    assert m["pass@2"]["value"] == pytest.approx((1 - 0 / 6 + 0) / 2)  # n-c=1 < 2 -> 1.0
    assert m["pass@4"]["value"] == pytest.approx(0.5)
    assert m["maj@2"]["value"] == pytest.approx(0.5)  # 5,5 -> right; 1,2 tie -> 1 (wrong)
    assert m["maj@4"]["value"] == pytest.approx(0.5)
    assert set(m) == {"acc", "pass@2", "pass@4", "maj@2", "maj@4"}
    assert m["acc"]["stderr"] > 0
    greedy = task_metrics([[True], [False], [True]], None, ["acc", "pass@k"])
    assert set(greedy) == {"acc"} and greedy["acc"]["value"] == pytest.approx(2 / 3)


def test_ks_and_breakdown():
    assert ks_for(1) == [1] and ks_for(8) == [1, 2, 4, 8] and ks_for(6) == [1, 2, 4, 6]
    b = breakdown([{"type": "A"}, {"type": "B"}, {"type": "A"}, {}], [1.0, 0.0, 0.0, 1.0])
    se = b["type"]["A"].pop("stderr")
    assert se == pytest.approx(bootstrap_stderr([1.0, 0.0])) and 0.2 < se < 0.5
    assert b == {"type": {"A": {"n": 2, "acc": 0.5}, "B": {"n": 1, "acc": 0.0, "stderr": None}}}
