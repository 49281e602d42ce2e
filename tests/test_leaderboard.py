"""Leaderboards: tables, deltas, bold, n, provenance, skipping bad files, byte-stable output.

Result files here are FIXTURES (tests/test_leaderboard_fixtures.py), written through the real
schema; their numbers are made up and say nothing about any method.
"""

import json
import shutil
from pathlib import Path

import pytest
from test_leaderboard_fixtures import result, write_fixture_runs
from typer.testing import CliRunner

from dapo_bench.cli import app
from dapo_bench.errors import UserError
from dapo_bench.leaderboard import render
from dapo_bench.leaderboard.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
ARITH = ROOT / "leaderboards" / "arith.yaml"
PAPER = ROOT / "leaderboards" / "paper.yaml"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return write_fixture_runs(tmp_path_factory.mktemp("lb") / "runs")


@pytest.fixture(scope="module")
def rendered(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    return render(ARITH, runs, out), out


def _row(md: str, label: str) -> list[str]:
    line = next(x for x in md.splitlines() if x.startswith(f"| {label} |"))
    return [c.strip() for c in line.strip("|").split("|")][1:]


def test_main_table_values_deltas_bold_n(rendered):
    _, out = rendered
    md = (out / "arith.md").read_text()
    main = md.split("## One seed, before the budget was a target")[1].split(
        "## DAPO's beta ablation")[0]
    assert _row(main, "Base (reference policy)")[:3] == ["55.0 ± 1.1", "25.0 ± 1.4", "40.0 ± 0.9"]
    dapo = _row(main, "DAPO (MC values; Liu et al., step-level)")
    assert dapo[0] == "**64.0** ± 1.1 (+9.0)" and dapo[3] == "7.92e+09"
    assert _row(main, "GRPO")[0] == "61.0 ± 1.1 (+6.0)"  # not bold: DAPO's 64.0 is best
    assert _row(main, "n")[:2] == ["2000", "1000"]
    assert "Provenance: commit: fixture0000000000." in main
    assert "arith: math 1" in main and "sampling: max_new_tokens=64, n=1" in main


def test_beta_and_iteration_tables(rendered):
    _, out = rendered
    md = (out / "arith.md").read_text()
    beta = md.split("## DAPO's beta ablation")[1].split("## Iterative DAPO")[0]
    labels = [x.split("|")[1].strip() for x in beta.splitlines() if x.startswith("| DAPO (MC values), β")]
    assert labels == ["DAPO (MC values), β = 0.01", "DAPO (MC values), β = 0.05",
                      "DAPO (MC values), β = 0.2"]
    it = md.split("## Iterative DAPO")[1].split("## Plots")[0]
    assert _row(it, "DAPO (MC values) iteration 1")[0] == "62.0 ± 1.1 (+7.0)"
    # cumulative FLOPs from the ledger stages it1.* and it1.*+it2.*
    assert _row(it, "DAPO (MC values) iteration 1")[2] == "3.30e+09"
    assert _row(it, "DAPO (MC values) iteration 2")[2] == "7.92e+09"


def test_bad_files_skipped_and_listed(rendered):
    res, out = rendered
    assert [s.path for s in res.skipped] == ["beta/partial/results.json",
                                             "main/broken/results.json"]
    md = (out / "arith.md").read_text()
    assert "- `main/broken/results.json`: 1: invalid JSON" in md
    assert "- `beta/partial/results.json`: field 'model' missing" in md
    assert str(out) not in md and "/tmp" not in md  # no machine-specific paths


def test_named_bad_file_is_an_error(runs, tmp_path):
    spec = tmp_path / "lb.yaml"
    spec.write_text(
        f"inputs: {{dir: {runs}, files: [main/broken/results.json]}}\n"
        "tables: [{id: t, columns: [{id: a, task: arith}], rows: [{match: {method: sft}}]}]\n")
    with pytest.raises(UserError, match="main/broken/results.json:1: invalid JSON"):
        render(spec, out_dir=tmp_path)


def test_render_twice_identical_bytes(runs, rendered, tmp_path):
    res, out = rendered
    again = render(ARITH, runs, tmp_path)
    names = sorted(p.name for p in res.written)
    assert names == sorted(p.name for p in again.written)
    assert sum(n.endswith(".png") for n in names) == 4
    for n in names:
        assert (out / n).read_bytes() == (tmp_path / n).read_bytes(), n
    png = (out / "arith.acc_vs_flops.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and b"Software" not in png and b"atplotlib" not in png


def test_input_order_does_not_matter(runs, rendered, tmp_path):
    # Same files copied in reverse creation order: identical outputs.
    copy = tmp_path / "runs"
    for p in sorted(runs.rglob("results.json"), reverse=True):
        dst = copy / p.relative_to(runs)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, dst)
    again = render(ARITH, copy, tmp_path / "out")
    _, out = rendered
    for p in again.written:
        assert p.read_bytes() == (out / p.name).read_bytes(), p.name


def test_manifest_hashes_inputs(rendered):
    _, out = rendered
    man = json.loads((out / "arith.manifest.json").read_text())
    assert "main/dapo/results.json" in man["inputs"]
    assert set(man["skipped"]) == {"beta/partial/results.json", "main/broken/results.json"}
    assert man["outputs"]["arith.md"] and man["not_drawn"] == []


def test_missing_runs_render_with_notes(tmp_path):
    res = render(ARITH, tmp_path / "none", tmp_path)
    md = (tmp_path / "arith.md").read_text()
    assert "GRPO: no result file matched method=grpo" in md
    assert res.not_drawn == ["acc_vs_flops", "training_curves", "beta_ablation", "calibration"]
    assert "## Plots" not in md


def test_several_matches_error_names_files(runs, tmp_path):
    spec = tmp_path / "lb.yaml"
    spec.write_text(
        f"inputs: {{dir: {runs}, globs: ['*/*/results.json']}}\n"
        "tables: [{id: t, columns: [{id: a, task: arith}], rows: [{match: {method: dapo}}]}]\n")
    with pytest.raises(UserError, match=r"4 result files match \(main/dapo/results.json, beta/dapo-b0.01"):
        render(spec, out_dir=tmp_path)


@pytest.mark.parametrize("text,match", [
    ("tables: [{id: t, columns: [{id: a, task: x, colour: red}]}]", r"columns\[0\]: unknown field 'colour'"),
    ("tables: [{id: t, columns: [{id: a, average: [b]}]}]", r"average: unknown column 'b'"),
    ("tables: [{id: t, columns: [{id: a}], rows: [{label: r}]}]", "exactly one of match"),
    ("tables: [{id: t, columns: [{id: a}], rows: [{values: {b: 1}}]}]", "unknown column 'b'"),
    ("tables: [{id: t, delta: column, columns: [{id: a}]}]", "needs base_column"),
    ("plots: [{id: p, kind: pie}]", "kind: expected one of"),
    ("tables: [oops", "malformed YAML"),
])
def test_bad_spec_names_file_and_field(tmp_path, text, match):
    spec = tmp_path / "bad.yaml"
    spec.write_text(text + "\n")
    with pytest.raises(UserError, match=match) as e:
        load_spec(spec)
    assert str(spec) in str(e.value)


def test_reference_rows_from_paper_beside_measured(runs, tmp_path):
    # A MATH-like table: a measured row (fixture) beside the paper's Llama-3.1 rows.
    spec = tmp_path / "lb.yaml"
    spec.write_text(
        f"inputs: {{dir: {runs}, globs: ['main/*/results.json']}}\n"
        "tables:\n"
        "  - id: t\n"
        "    decimals: 2\n"
        "    columns: [{id: m, label: MATH, task: arith}]\n"
        "    rows: [{id: mine, label: mine, base: true, match: {method: grpo}}]\n"
        f"    reference: [{{spec: {PAPER}, table: table1,\n"
        "      rows: [llama31_8b_instruct, llama31_8b_instruct_dapo], columns: {m: math}}]\n")
    render(spec, out_dir=tmp_path)
    md = (tmp_path / "lb.md").read_text()
    assert "| mine | 61.00 ± 1.09 |" in md
    assert "| *Llama-3.1-8B-Instruct (published)* | 49.42 |" in md
    assert "| *+ DAPO (published)* | 53.62 (+4.20) |" in md  # delta among published rows
    assert "published numbers in italics" in md
    csv = (tmp_path / "lb.csv").read_text().splitlines()
    assert "t,ref:llama31_8b_instruct_dapo,+ DAPO (published),published,published,m,53.62,,4.2,,0" in csv


def test_cli_renders_and_warns_on_stderr(runs, tmp_path):
    r = CliRunner().invoke(app, ["leaderboard", str(ARITH), "--runs", str(runs),
                                 "--out", str(tmp_path), "--no-plots"])
    assert r.exit_code == 0, r.output
    assert "skipped main/broken/results.json" in r.output
    assert (tmp_path / "arith.md").is_file() and not list(tmp_path.glob("*.png"))


def test_cli_bad_spec_exit_2(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "bad.yaml"
    bad.write_text("tables: [{id: t}]\n")
    p = subprocess.run([sys.executable, "-m", "dapo_bench.cli", "leaderboard", str(bad)],
                       capture_output=True, text=True, check=False)
    assert p.returncode == 2 and p.stderr.startswith("error: ") and "no columns" in p.stderr


def test_iteration_in_results_object_form(tmp_path):
    # iterations given as full results objects (with tasks and ledger) are used as they are
    obj = result("dapo", 0.6, 0.3)
    obj["iterations"] = [{"tasks": obj["tasks"], "ledger": {"flops": 5.0}}]
    from dapo_bench.leaderboard.runs import load_run
    from dapo_bench.results import write_results

    path = write_results(tmp_path / "r", obj)
    runs = load_run(path, "r/results.json")
    it = next(r for r in runs if r.iteration == 1)
    assert it.get("ledger.flops") == 5.0 and it.get("method") == "dapo"
    assert [r.evaluated for r in runs if r.evaluated] == ["control", "final", "reference"]


def test_training_curves_one_line_per_iteration(runs):
    from dapo_bench.leaderboard.plots import training_curves
    from dapo_bench.leaderboard.runs import collect
    from dapo_bench.leaderboard.spec import Inputs, Plot

    loaded, _ = collect(Inputs(globs=["main/*/results.json"]), runs)
    fig = training_curves(Plot(id="c", kind="training_curves", metric="loss"), loaded)
    labels = sorted(line.get_label() for line in fig.axes[0].get_lines())
    assert labels == ["dapo it1", "dapo it2", "dpo", "grpo", "ppo", "rft", "sft"]


def test_calibration_reads_heldout_bins(runs):
    from dapo_bench.leaderboard.plots import calibration
    from dapo_bench.leaderboard.runs import collect
    from dapo_bench.leaderboard.spec import Inputs, Plot

    loaded, _ = collect(Inputs(globs=["main/*/results.json"]), runs)
    fig = calibration(Plot(id="c", kind="calibration", match={"method": "dapo"}), loaded)
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    assert "dapo (brier=0.170, ece=0.040)" in lines
    assert list(lines["dapo (brier=0.170, ece=0.040)"].get_xdata()) == [0.7]  # empty bin dropped
