"""Eval and infrastructure errors (``Verdict.infra_error``: the verifier failed on its own
side): verified a second time at once; what still fails is left out of the metrics with its
whole problem and counted, never scored 0; the next run of the command verifies it again."""

from collections import Counter

import pytest
from _canned import Oracle
from dapo_bench.verifiers.base import Verdict

from dapo_bench.eval import evaluate
from dapo_bench.eval.store import per_problem_scores
from dapo_bench.io import read_jsonl
from dapo_bench.tasks import load_task
from dapo_bench.tasks.task import Task


def _flaky(real, always: str, once: str, tries: Counter):
    """Task.score, but ``always``'s verdict is a sandbox error on every try and ``once``'s a
    crashed checker on its first try only."""

    def score(self, verifier, texts, problems, finished=None):
        out = []
        for v, p in zip(real(self, verifier, texts, problems, finished), problems):
            tries[p.id] += 1
            if p.id == always:
                v = Verdict(False, "sandbox_error")
            elif p.id == once and tries[p.id] == 1:
                v = Verdict(False, "checker_crashed")
            out.append(v)
        return out

    return score


def test_retried_then_masked_then_verified_by_the_rerun(tmp_path, monkeypatch):
    task = load_task("arith", limit=6)
    ids = [p.id for p in task.problems]
    # right on problems 0, 1, 2; wrong on 3, 4, 5
    gen = Oracle({task.prompt(p): f"\\boxed{{{p.gold if i < 3 else -1}}}"
                  for i, p in enumerate(task.problems)})
    real, tries = Task.score, Counter()
    monkeypatch.setattr(Task, "score", _flaky(real, ids[0], ids[1], tries))
    res = evaluate(gen, [task], run_dir=tmp_path / "r", n=1, quiet=True)["tasks"]["arith"]
    assert tries[ids[1]] == 2 and tries[ids[0]] == 2 and tries[ids[2]] == 1  # one second try
    assert res["infra_errors"] == {"problems": 1, "samples": 1, "reasons": ["sandbox_error"],
                                   "ids": [ids[0]]}
    # problem 0 is out, not a 0: 2 right of the 5 scored (a 0 for it would give 2/6)
    assert res["n_problems"] == 5 and res["n_samples"] == 5
    assert res["metrics"]["acc"]["value"] == pytest.approx(2 / 5)
    assert res["reasons"]["sandbox_error"] == 1
    rows = {r["id"]: r for r in read_jsonl(tmp_path / "r" / "samples.jsonl")}
    assert rows[ids[0]]["samples"][0]["reason"] == "sandbox_error"  # logged, not dropped
    assert rows[ids[1]]["samples"][0]["passed"] is True  # the second try's verdict
    assert ids[0] not in per_problem_scores(tmp_path / "r", "arith")  # paired compares too

    monkeypatch.setattr(Task, "score", real)  # the verifier works again: rerun the command
    res = evaluate(gen, [task], run_dir=tmp_path / "r", n=1, quiet=True)["tasks"]["arith"]
    assert gen.asked == 6  # nothing generated again
    assert "infra_errors" not in res and res["n_problems"] == 6
    assert res["metrics"]["acc"]["value"] == pytest.approx(3 / 6)


def test_a_task_with_no_verified_problem_is_an_error(tmp_path, monkeypatch):
    task = load_task("arith", limit=2)
    gen = Oracle({task.prompt(p): "\\boxed{1}" for p in task.problems})

    def broken(self, verifier, texts, problems, finished=None):
        return [Verdict(False, "verifier_error") for _ in texts]

    monkeypatch.setattr(Task, "score", broken)
    with pytest.raises(RuntimeError, match="arith: every problem failed on the infrastructure's "
                                           "side .*verifier_error.*rerun"):
        evaluate(gen, [task], run_dir=tmp_path / "r", n=1, quiet=True)
    assert len(read_jsonl(tmp_path / "r" / "samples.jsonl")) == 2  # kept for the rerun
