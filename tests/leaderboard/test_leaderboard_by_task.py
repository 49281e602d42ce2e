"""``pick: by_task``: one model's row assembled from several eval runs, each column from the
one run that has its task (e.g. a long task evaluated in a run of its own). FIXTURE result
files (made-up numbers)."""

import pytest
from test_leaderboard_fixtures import md_row, result

from dapo_bench.errors import UserError
from dapo_bench.leaderboard import render
from dapo_bench.results import write_results

SPEC = """
inputs: {dir: runs, globs: ["*/results.json"]}
tables:
  - id: t
    delta: none
    pick: by_task
    columns:
      - {id: a, label: ID, task: arith}
      - {id: b, label: OOD, task: arith_ood}
    rows:
      - {id: m, label: Model, match: {kind: eval, path: ["main/*", "extra/*"]}}
"""


def _eval_run(runs, name, acc, ood, keep):
    r = result("base", acc, ood, kind="eval", run_id=name)
    r["tasks"] = {t: v for t, v in r["tasks"].items() if t in keep}
    write_results(runs / name, r)


def test_each_column_comes_from_the_run_that_has_its_task(tmp_path):
    runs = tmp_path / "runs"
    _eval_run(runs, "main", 0.60, 0.99, {"arith"})
    _eval_run(runs, "extra", 0.99, 0.30, {"arith_ood"})
    (tmp_path / "lb.yaml").write_text(SPEC)
    render(tmp_path / "lb.yaml", out_dir=tmp_path / "out", draw_plots=False)
    md = (tmp_path / "out" / "lb.md").read_text()
    a, b = md_row(md, "Model")[:2]
    assert a.startswith("60.0") and b.startswith("30.0")
    assert "extra/results.json" in md and "main/results.json" in md


def test_a_task_in_two_runs_is_an_error_naming_both(tmp_path):
    runs = tmp_path / "runs"
    _eval_run(runs, "main", 0.60, 0.40, {"arith", "arith_ood"})
    _eval_run(runs, "extra", 0.99, 0.30, {"arith_ood"})
    (tmp_path / "lb.yaml").write_text(SPEC)
    with pytest.raises(UserError, match=r"row m: column b is in both extra/results.json and "
                                        r"main/results.json"):
        render(tmp_path / "lb.yaml", out_dir=tmp_path / "out", draw_plots=False)
