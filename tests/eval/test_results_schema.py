"""results.json version 2: the parsed task spec, suite averages (macro and micro, with stderr), the task's full size
under --limit, the digest of the rows used, breakdown stderr; version 1 files still load."""

import json
import math

import pytest
from _canned import Oracle

from dapo_bench.errors import UserError
from dapo_bench.eval import evaluate
from dapo_bench.io import rows_digest
from dapo_bench.results import (
    SCHEMA_VERSION,
    build_results,
    load_results,
    suite_summary,
    validate_results,
)
from dapo_bench.tasks import load_task


def test_rows_digest_is_canonical_and_order_sensitive():
    a = [{"q": "1+1", "a": 2}, {"q": "é", "a": None}]
    # keys sorted, non-ASCII kept, one line per row: the documented canonical form
    text = '{"a": 2, "q": "1+1"}\n{"a": null, "q": "é"}\n'
    import hashlib

    assert rows_digest(a) == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert rows_digest([{"a": 2, "q": "1+1"}, a[1]]) == rows_digest(a)
    assert rows_digest(a[::-1]) != rows_digest(a) and rows_digest(a[:1]) != rows_digest(a)
    assert len(rows_digest([])) == 16


def _block(n, acc, se, **more):
    metrics = {"acc": {"value": acc, "stderr": se}}
    metrics.update({k: {"value": v, "stderr": s} for k, (v, s) in more.items()})
    return {"n_problems": n, "metrics": metrics}


def test_suite_summary_macro_and_micro_against_hand_values():
    tasks = {"a": _block(100, 0.5, 0.05, **{"pass@4": (0.7, 0.04)}), "b": _block(300, 0.9, 0.02),
             "c": _block(10, 0.1, None)}
    s = suite_summary(tasks, ["a", "b"])
    assert s["tasks"] == ["a", "b"] and s["n_problems"] == 400
    assert set(s["macro"]) == set(s["micro"]) == {"acc"}  # pass@4: not every task has it
    assert s["macro"]["acc"]["value"] == pytest.approx(0.7)
    assert s["macro"]["acc"]["stderr"] == pytest.approx(math.sqrt(0.05**2 + 0.02**2) / 2)
    assert s["micro"]["acc"]["value"] == pytest.approx((50 + 270) / 400)
    assert s["micro"]["acc"]["stderr"] == pytest.approx(
        math.sqrt((100 * 0.05) ** 2 + (300 * 0.02) ** 2) / 400)
    assert suite_summary(tasks, ["a", "c"])["macro"]["acc"]["stderr"] is None
    with pytest.raises(ValueError, match="not in the results"):
        suite_summary(tasks, ["a", "zzz"])


def _minimal(version):
    return {"schema_version": version, "run_id": "r", "kind": "eval", "method": "base",
            "model": {}, "tasks": {"t": {"metrics": {"acc": {"value": 0.5}}}}, "provenance": {}}


def test_old_versions_load_and_unknown_ones_are_refused(tmp_path):
    for v in (1, SCHEMA_VERSION):
        assert validate_results(_minimal(v))["schema_version"] == v
    for v in (0, 3, "2", True):
        with pytest.raises(UserError, match="schema_version"):
            validate_results(_minimal(v), "x.json")
    bad = dict(_minimal(2), suites=[])
    with pytest.raises(UserError, match="'suites' must be a mapping"):
        validate_results(bad)
    res = build_results(run_id="r", kind="eval", method="base", model={}, backend="hf", seed=0,
                        sampling=None, tasks={"t": _block(4, 0.25, 0.1)}, config={},
                        started_at="now", wall_seconds=1.0, suites={"s": ["t"]})
    assert res["schema_version"] == 2 and res["suites"]["s"]["macro"]["acc"]["value"] == 0.25


def test_eval_results_carry_totals_rows_hash_breakdown_stderr_and_suite(tmp_path):
    tasks = [load_task("arith", limit=6), load_task("arith_ood", limit=3)]
    answers = {t.prompt(p): f"\\boxed{{{p.gold}}}" for t in tasks for p in t.problems}
    answers[tasks[0].prompt(tasks[0].problems[0])] = "\\boxed{nope}"
    res = evaluate(Oracle(answers, n_tokens=2), tasks, run_dir=tmp_path / "r", quiet=True)
    assert json.loads(json.dumps(res)) == load_results(tmp_path / "r" / "results.json")
    a, ood = res["tasks"]["arith"], res["tasks"]["arith_ood"]
    assert (a["n_problems"], a["n_problems_total"]) == (6, 2000)
    assert (ood["n_problems"], ood["n_problems_total"]) == (3, 1000)
    from dapo_bench.arith import make_split

    assert a["rows_hash"] == rows_digest(make_split("test")[:6]) == tasks[0].rows_hash
    assert a["spec"]["name"] == "arith" and a["spec"]["source"]["builtin"] == \
        "dapo_bench.arith:make_split" and "spec_path" not in a["spec"]
    assert a["rows_hash"] != rows_digest(make_split("test")[:5])
    for by_value in a["breakdown"]["n_steps"].values():
        assert "stderr" in by_value and (by_value["stderr"] is None) == (by_value["n"] == 1)
    suite = res["suites"]["arith"]
    assert suite["tasks"] == ["arith", "arith_ood"] and suite["n_problems"] == 9
    assert suite["macro"]["acc"]["value"] == pytest.approx((5 / 6 + 1.0) / 2)
    assert suite["micro"]["acc"]["value"] == pytest.approx(8 / 9)
    assert "all" not in res["suites"] and "math" not in res["suites"]
    # docs/results.md documents every field this writes (top level, task block, suite block)
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "results.md").read_text()
    for key in [*res, *a, *suite]:
        assert f'"{key}"' in doc, f"docs/results.md does not document {key!r}"
    one = evaluate(Oracle(answers, n_tokens=2), tasks[:1], run_dir=tmp_path / "one", quiet=True)
    assert one["suites"] == {}  # half a suite has no suite average


def test_suite_stderr_matches_a_stratified_bootstrap():
    # the combined stderr is that of the weighted mean of independent tasks (bench/suite_stderr.py)
    import numpy as np

    from dapo_bench.eval.metrics import bootstrap_stderr

    rng = np.random.default_rng(1)
    xs = [(rng.random(400) < 0.9).astype(float), (rng.random(40) < 0.2).astype(float)]
    tasks = {str(i): _block(len(x), float(x.mean()), bootstrap_stderr(x)) for i, x in enumerate(xs)}
    s = suite_summary(tasks, ["0", "1"])
    means = [x[rng.integers(0, len(x), (4000, len(x)))].mean(axis=1) for x in xs]
    macro = ((means[0] + means[1]) / 2).std(ddof=1)
    micro = ((means[0] * 400 + means[1] * 40) / 440).std(ddof=1)
    assert s["macro"]["acc"]["stderr"] == pytest.approx(macro, rel=0.05)
    assert s["micro"]["acc"]["stderr"] == pytest.approx(micro, rel=0.05)
