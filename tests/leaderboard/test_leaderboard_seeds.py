"""Tables over seeds: every seed's run of a method in one row, mean ± standard error of the
mean, and each seed's paired gain in the notes. FIXTURE result files (made-up numbers)."""

import math

from test_leaderboard_fixtures import md_row, result

from dapo_bench.leaderboard import render
from dapo_bench.results import write_results

SPEC = """
inputs: {dir: runs, globs: ["*/*/results.json"]}
tables:
  - id: seeds
    title: "Over seeds"
    seeds: true
    columns:
      - {id: arith, label: "arith (ID)", task: arith, metric: acc}
      - {id: gain, label: "gain ID", gain: arith}
      - {id: flops, label: FLOPs, field: ledger.flops, format: sci}
    rows:
      - {id: base, label: Base, base: true, match: {method: base}}
      - {id: dapo, label: DAPO, match: {method: dapo}}
      - {id: grpo, label: GRPO, match: {method: grpo}}
"""


def _run(method, seed, acc, gain, se):
    r = result(method, acc, 0.3)
    r["seed"] = seed
    r["comparison"] = {"final_vs_reference": {"arith": {"diff": gain, "stderr": se}}}
    return r


def test_seed_rows_mean_sem_and_per_seed_gains(tmp_path):
    runs = tmp_path / "runs"
    base = result("base", 0.55, 0.25)
    base.update(kind="eval", ledger=None, history=[])
    del base["evals"]
    write_results(runs / "s0" / "base", base)
    gains = {0: (0.62, 0.02, 0.006), 1: (0.60, 0.01, 0.005), 2: (0.64, 0.03, 0.007)}
    for s, (acc, g, se) in gains.items():
        write_results(runs / f"s{s}" / "dapo", _run("dapo", s, acc, g, se))
    write_results(runs / "s0" / "grpo", _run("grpo", 0, 0.58, 0.015, 0.004))
    (tmp_path / "lb.yaml").write_text(SPEC)
    render(tmp_path / "lb.yaml", out_dir=tmp_path / "out", draw_plots=False)
    md = (tmp_path / "out" / "lb.md").read_text()
    dapo = md_row(md, "DAPO")
    # mean of 62, 60, 64 = 62.0; sd 2.0, standard error 2 / sqrt(3) = 1.15
    assert dapo[0] == f"**62.0** ± {2 / math.sqrt(3):.1f} (+7.0)"
    # gains 2, 1, 3 points: mean 2.0, sd 1.0, sem 0.58
    assert dapo[1] == f"**+2.0** ± {1 / math.sqrt(3):.1f}"
    assert "DAPO: 3 seeds (0, 1, 2); gain ID per seed +2.0 ± 0.6, +1.0 ± 0.5, +3.0 ± 0.7." in md
    # one seed: its own paired stderr, and the note says it is one seed
    assert md_row(md, "GRPO")[1] == "+1.5 ± 0.4"
    assert "GRPO: 1 seed (0); gain ID per seed +1.5 ± 0.4." in md
    assert md_row(md, "Base")[1] == "–"  # the reference has no gain over itself
    again = tmp_path / "again"
    render(tmp_path / "lb.yaml", out_dir=again, draw_plots=False)
    assert (again / "lb.md").read_bytes() == md.encode()


EVALS = """
inputs: {dir: runs, globs: ["*/results.json"]}
tables:
  - id: evals
    title: "One training run's policies"
    pick: last
    columns:
      - {id: arith, label: arith, task: arith, metric: acc}
      - {id: gain, label: "paired gain", gain: arith}
    rows:
      - {id: ref, label: Reference, base: true, match: {evaluated: reference}}
      - {id: control, label: Control, match: {evaluated: control}}
      - {id: final, label: Final, match: {evaluated: final}}
"""


def test_each_evaluated_policy_shows_its_own_paired_gain(tmp_path):
    """A training run's control row reads control_vs_reference, not the final policy's gain;
    the reference row has none."""
    r = result("dapo", 0.62, 0.3)
    r["comparison"] = {"final_vs_reference": {"arith": {"diff": 0.02, "stderr": 0.006}},
                       "control_vs_reference": {"arith": {"diff": -0.01, "stderr": 0.004}}}
    write_results(tmp_path / "runs" / "dapo", r)
    (tmp_path / "lb.yaml").write_text(EVALS)
    render(tmp_path / "lb.yaml", out_dir=tmp_path / "out", draw_plots=False)
    md = (tmp_path / "out" / "lb.md").read_text()
    assert md_row(md, "Final")[1] == "**+2.0** ± 0.6"  # bold: the best gain
    assert md_row(md, "Control")[1] == "-1.0 ± 0.4"
    assert md_row(md, "Reference")[1] == "–"


def test_an_iteration_row_shows_no_gain(tmp_path):
    """Results hold no paired comparison per iteration: iteration 1 must not borrow the final
    policy's gain."""
    from dapo_bench.leaderboard.runs import load_run
    from dapo_bench.leaderboard.seeds import run_gain

    r = result("dapo", 0.62, 0.3, iterations=2, gains={"arith": (0.02, 0.006)})
    runs = load_run(write_results(tmp_path / "r", r), "r/results.json")
    assert run_gain(runs[0], "arith") == (2.0, 0.6)
    assert [run_gain(x, "arith") for x in runs if x.iteration] == [None, None]
