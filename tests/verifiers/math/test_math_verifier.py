"""The math verifier's API, bounds, worker lifecycle, batch order and CLI."""

import json
import os
import subprocess
import sys
import threading

import pytest
from dapo_bench.verifiers.base import VERIFIERS
from dapo_bench.verifiers.math import (
    MathVerifier,
    extract_answer,
    extract_gold_from_solution,
    normalize_answer,
    verify,
    verify_batch,
)

from dapo_bench.errors import UserError


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is not alive
        return f.read().split()[2] != "Z"


def test_import_pulls_in_neither_sympy_nor_torch():
    code = ("import sys, dapo_bench.verifiers.math; "
            "print(sorted(m for m in ('sympy', 'torch', 'latex2sympy2_extended') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_registered_with_its_interface():
    cls = VERIFIERS.get("math")
    assert cls is MathVerifier
    assert (cls.name, cls.fields) == ("math", ("prediction", "gold"))
    assert cls.version


@pytest.mark.parametrize("kwargs", [{"bogus": 1}, {"mode": "fast"}, {"timeout": 0},
                                    {"workers": 0}])
def test_bad_options_are_user_errors(kwargs):
    with pytest.raises(UserError):
        MathVerifier(**kwargs)


def test_bad_gold_and_mismatched_batch_are_user_errors():
    with pytest.raises(UserError, match="gold"):
        verify("\\boxed{1}", None)
    with pytest.raises(UserError, match="gold"):
        verify("\\boxed{1}", [])
    with pytest.raises(UserError, match="2 predictions but 1"):
        verify_batch(["1", "2"], ["1"])


def test_extract_answer_precedence_and_fallback():
    # "the answer is" is not a mark (docs/math-verifier.md): a box wins over it; a later
    # "final answer" statement is a mark, and the last mark wins
    assert extract_answer(r"so \boxed{\frac{1}{2}}. The answer is 3") == r"\frac{1}{2}"
    assert extract_answer(r"so \boxed{\frac{1}{2}}. The final answer is 3") == "3"
    assert extract_answer(r"The answer is 3. So \boxed{\frac{1}{2}}") == r"\frac{1}{2}"
    assert extract_answer(r"so \boxed{\frac{1}{2}}. The answer is correct.") == r"\frac{1}{2}"
    assert extract_answer(r"\boxed{\{1,\{2\}\}}") == r"\{1,\{2\}\}"
    assert extract_answer("The final answer is $x=3$. I hope it is correct.") == "x=3"
    assert extract_answer("Step 1: 3 apples, then 2 pears") == "2"
    assert extract_answer("Step 1: 3 apples, then 2 pears", fallback_last_number=False) is None
    assert extract_answer(r"unclosed \boxed{12") == "12"  # falls back to the last number
    assert extract_answer("") is None


def test_extract_gold_from_solution():
    assert extract_gold_from_solution(r"so $x=\boxed{4}$. Then $\boxed{\frac{a}{b}}$") == \
        r"\frac{a}{b}"
    assert extract_gold_from_solution(r"so $\boxed{4}$ and $\boxed{5}$") == "4, 5"  # one group
    assert extract_gold_from_solution("9 * 2 = 18\n#### 18") == "18"
    with pytest.raises(UserError):
        extract_gold_from_solution("no answer here")


def test_normalize_answer_keys():
    assert normalize_answer(r"\frac12") == normalize_answer("0.5") == normalize_answer("1/2")
    assert normalize_answer(r"\frac{1}{3}") != normalize_answer("0.33")
    assert normalize_answer(r"\{3,1,2\}") == normalize_answer("1, 2, 3")
    assert normalize_answer("(1,2)") != normalize_answer("(2,1)")
    assert normalize_answer("x=3") == normalize_answer("3") == normalize_answer("$3$")
    assert normalize_answer("1,000") == normalize_answer("1000")
    assert normalize_answer("x" * 50_000) == "x" * 200  # bounded: no parse of huge input


def test_gold_forms_number_list_and_multi_answer():
    assert verify(r"\boxed{27}", 27.0).passed
    assert not verify(r"\boxed{27}", 27.5).passed
    assert verify(r"\boxed{0.5}", [r"\frac{1}{3}", r"\frac{1}{2}"]).passed  # alternatives
    assert verify(r"\boxed{2, 1}", "$1$, $2$").passed  # multi-answer: one string
    assert not verify(r"\boxed{2}", "$1$, $2$").passed


def test_reasons():
    assert verify("There are no digits here.", "5").reason == "no_answer"
    assert verify(r"\boxed{6}", "5").reason == "wrong_answer"
    assert verify(r"\boxed{\frac{}{}{", "5", mode="answer").reason in ("parse_error",
                                                                        "wrong_answer")
    v = verify(r"\boxed{\frac{1}{2}}", "0.5")
    assert (v.passed, v.reason, v.extracted) == (True, "ok", r"\frac{1}{2}")
    assert v.seconds >= 0


@pytest.mark.parametrize(("pred", "reason"), [
    (r"\boxed{10^{10^{10}}}", {"too_large", "timeout"}),
    ("\\boxed{" + "1" * 200_000 + "}", {"too_large"}),
    ("1" * 200_000, {"too_large"}),
    ("\\boxed{" + "{" * 500 + "1" + "}" * 500 + "}", {"too_large"}),
    ("\\(x" * 30000, {"no_answer"}),  # unclosed openers: span scanning stays linear
    ("\\boxed{" * 12000, {"no_answer"}),
    ("$x$ and " * 10000, {"too_large"}),  # one span run of 10,000 answers
])
def test_hostile_sizes_are_bounded(pred, reason):
    v = verify(pred, "5", timeout=2.0)
    assert not v.passed and v.reason in reason
    assert v.seconds < 10


def test_hard_deadline_kills_and_replaces_the_worker():
    with MathVerifier(timeout=0.5, workers=1, mode="answer") as mv:
        mv.warm()  # a cold start is not charged to the deadline, but would count in .seconds
        slow = r"\int_0^{10^{9}} \sin(x^{x}) dx"
        v = mv.verify(slow, "5")
        assert (v.passed, v.reason) == (False, "timeout")
        assert v.seconds < 3
        assert mv.verify(r"2\sqrt{2}", r"\sqrt{8}").passed  # a fresh worker takes over


def test_close_leaves_no_worker_behind():
    mv = MathVerifier(workers=2, mode="answer")
    golds = [r"\sqrt[3]{16}", "x+1"] * 20  # both need sympy (not exact.py's forms)
    preds = [r"2\sqrt[3]{2}", r"\frac{x^2-1}{x-1}"] * 20
    assert all(v.passed for v in mv.verify_batch(preds, golds))
    pids = mv._pool.pids()
    assert pids and all(_alive(p) for p in pids)
    mv.close()
    assert not any(_alive(p) for p in pids)


def test_batch_keeps_order_and_matches_single_calls():
    golds = [str(i) for i in range(40)] + [r"\sqrt{2}", "x+1", "(1,2)", r"\frac{1}{3}"]
    preds = [rf"\boxed{{{i if i % 3 else i + 1}}}" for i in range(40)] + [
        r"\boxed{1.414213562373}", r"\boxed{\frac{x^2-1}{x-1}}", r"\boxed{(2,1)}", r"\boxed{0.33}"]
    with MathVerifier(workers=2) as mv:
        batch = mv.verify_batch(preds, golds)
        single = [mv.verify(p, g) for p, g in zip(preds, golds)]
    assert [v.passed for v in batch] == [v.passed for v in single]
    assert [v.passed for v in batch[:6]] == [False, True, True, False, True, True]
    assert [v.passed for v in batch[40:]] == [True, True, False, False]


def _mixed_pairs(n: int) -> tuple[list, list]:
    """Boxed integers, fractions, radicals, responses and a sympy pair, half of them right."""
    kinds = [(r"\boxed{{{i}}}", "{i}"), (r"so $x = \frac{{{i}}}{{7}}$", "{i}/7"),
             (r"\boxed{{{i}\sqrt{{2}}}}", r"\sqrt{{{ii}}}"), ("The answer is {i}.", "{j}"),
             (r"\boxed{{\sin^2(1) + \cos^2(1) + {i}}}", "{j}")]
    preds, golds = [], []
    for k in range(n):
        p, g = kinds[k % len(kinds)]
        i = k + 1
        preds.append(p.format(i=i))
        golds.append(g.format(i=i, ii=2 * i * i, j=i + 1 if k % 2 else i))
    return preds, golds


def test_fast_path_in_the_workers_gives_the_same_verdicts():
    """``fast_in_workers`` (the reward server's setting) checks a batch in the worker processes:
    every field of every verdict but its time is the calling thread's."""
    preds, golds = _mixed_pairs(130)
    with MathVerifier(workers=2) as here, MathVerifier(workers=2, fast_in_workers=True) as there:
        want, got = here.verify_batch(preds, golds), there.verify_batch(preds, golds)
    strip = [(v.passed, v.reason, v.extracted, v.details) for v in want]
    assert [(v.passed, v.reason, v.extracted, v.details) for v in got] == strip
    assert 30 < sum(v.passed for v in got) < len(got)
    assert any(v.details["rule"].startswith("sympy") for v in got)  # some went on to sympy


def test_fast_path_falls_back_to_this_thread_when_a_worker_fails():
    """A chunk whose worker cannot run it (here: the pool is closed, as after a crash) is
    checked in the calling thread: the same verdicts, no verifier_error for pairs that never
    needed sympy."""
    preds, golds = _mixed_pairs(100)
    keep = [k for k in range(100) if k % 5 != 4]  # no sympy pair
    preds, golds = [preds[k] for k in keep], [golds[k] for k in keep]
    with MathVerifier(workers=2) as here:
        want = here.verify_batch(preds, golds)
    there = MathVerifier(workers=2, fast_in_workers=True)
    there.verify_batch(preds[:64], golds[:64])
    there._pool.close()
    got = there.verify_batch(preds, golds)
    there.close()
    assert [(v.passed, v.reason, v.extracted) for v in got] == \
        [(v.passed, v.reason, v.extracted) for v in want]
    assert not any(v.reason == "verifier_error" for v in got)


def test_verify_is_safe_from_threads():
    results = {}

    def work(i):
        results[i] = verify(rf"\boxed{{{i}\sqrt{{2}}}}", rf"\sqrt{{{2 * i * i}}}").passed

    threads = [threading.Thread(target=work, args=(i,)) for i in range(1, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: True for i in range(1, 7)}


def test_cli_verify_writes_ordered_lines_and_rejects_missing_fields(tmp_path):
    rows = [{"prediction": r"so \boxed{\frac12}", "gold": "0.5"},
            {"prediction": r"\boxed{3}", "gold": "4"},
            {"prediction": "I could not solve it.", "gold": "4"}]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    cmd = [sys.executable, "-m", "dapo_bench.cli", "verify", "--verifier", "math", str(src),
           "--out", str(out), "--workers", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(g["passed"], g["reason"]) for g in got] == [
        (True, "ok"), (False, "wrong_answer"), (False, "no_answer")]
    assert "1/3" in r.stderr and "no_answer" in r.stderr
    src.write_text(json.dumps({"prediction": "1"}) + "\n")
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert r.returncode == 2 and "gold" in r.stderr


def test_cli_judges_short_answers_and_responses_without_a_flag(tmp_path):
    """One file mixing bare answers and full responses: each judged right with no flag; each
    line names the text taken as the answer, and with --explain how it was found and the rule."""
    rows = [{"prediction": r"3\frac12", "gold": r"\frac72"},
            {"prediction": r"$\frac13 $", "gold": "1/3"},
            {"prediction": r"\frac{10}{9}", "gold": "9"},
            {"prediction": r"Thus $x \geq 5$ is the solution.", "gold": r"x\ge 5"},
            {"prediction": r"The roots are $\boxed{2}$ and $\boxed{-3}$.", "gold": "2, -3"},
            {"prediction": "12:00", "gold": "1:00"}]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cmd = [sys.executable, "-m", "dapo_bench.cli", "verify", str(src), "--workers", "1"]
    plain = subprocess.run(cmd, capture_output=True, text=True, check=True)
    got = [json.loads(line) for line in plain.stdout.splitlines()]
    assert [g["passed"] for g in got] == [True, True, False, True, True, False]
    assert [g["extracted"] for g in got] == [
        r"3\frac12", r"$\frac13 $", r"\frac{10}{9}", r"x \geq 5", "2, -3", "12:00"]
    assert "rule" not in got[0]
    explained = subprocess.run(cmd + ["--explain"], capture_output=True, text=True, check=True)
    got = [json.loads(line) for line in explained.stdout.splitlines()]
    assert [g["answer_from"] for g in got] == ["bare", "bare", "bare", "sentence", "box", "bare"]
    assert got[5]["rule"] == "ratio: number" and all(g["rule"] for g in got)
