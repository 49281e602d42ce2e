"""Leaderboards: the committed arith spec over FIXTURE runs: seeds, critic, beta and iteration
tables (means over seeds and their standard errors recomputed here by hand), deltas, bold, n,
provenance, plots, skipping bad files, byte-stable output; spec errors; the CLI.

Result files here are FIXTURES (tests/leaderboard/test_leaderboard_fixtures.py), written
through the real schema; their numbers are made up and say nothing about any method.
"""

import csv
import json
import math
import shutil
import statistics
from pathlib import Path

import pytest
from test_leaderboard_fixtures import (
    BASE,
    BETA,
    BINS,
    CRITIC,
    ITER,
    KEPT,
    N_PARAMS,
    SEEDS,
    TARGET,
    md_row,
    result,
    write_fixture_runs,
)
from typer.testing import CliRunner

from dapo_bench.cli import app
from dapo_bench.errors import UserError
from dapo_bench.leaderboard import render
from dapo_bench.leaderboard.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
ARITH = ROOT / "leaderboards" / "arith.yaml"
PAPER = ROOT / "leaderboards" / "paper.yaml"
BAD = ["critic/partial/results.json", "seeds/s1/broken/results.json"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return write_fixture_runs(tmp_path_factory.mktemp("lb") / "runs")


@pytest.fixture(scope="module")
def rendered(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    return render(ARITH, runs, out), out


@pytest.fixture(scope="module")
def md(rendered):
    return (rendered[1] / "arith.md").read_text()


@pytest.fixture(scope="module")
def cells(rendered):
    """The long CSV as {(table, row_id, column): line}."""
    with open(rendered[1] / "arith.csv", newline="") as f:
        return {(x["table"], x["row_id"], x["column"]): x for x in csv.DictReader(f)}


def _labels(section: str) -> list[str]:
    return [x.split("|")[1].strip() for x in section.splitlines()
            if x.startswith("| ") and not x.startswith(("| Row |", "| n |"))]


def _section(md: str, table_id: str) -> str:
    title = {t.id: t.title for t in load_spec(ARITH).tables}[table_id]
    return md.split(f"## {title}\n")[1].split("\n## ")[0]


def _flops(tokens: int, iterations: int = 1) -> float:
    # the fixture charges `tokens` generated and tokens // 2 trained per iteration
    return iterations * 2 * N_PARAMS * (tokens + 3 * (tokens // 2))


def _by_hand(entries: list[tuple], col: str) -> tuple[float, float | None]:
    """Mean over seeds and the standard error of that mean (sample sd / sqrt(k)); one seed:
    its own stderr. ``entries`` are the fixture's (arith, ood, gain, gain_ood, tokens)."""
    if col in ("flops", "ratio"):
        vals = [_flops(e[4]) / (TARGET if col == "ratio" else 1) for e in entries]
        return statistics.mean(vals), None
    if col in ("arith", "arith_ood"):
        i, n = (0, 2000) if col == "arith" else (1, 1000)
        vals = [100 * e[i] for e in entries]
        ses = [100 * math.sqrt(e[i] * (1 - e[i]) / n) for e in entries]
    else:
        gains = [e[2] if col == "gain_arith" else e[3] for e in entries]
        vals, ses = [100 * g for g, _ in gains], [100 * se for _, se in gains]
    k = len(vals)
    return statistics.mean(vals), statistics.stdev(vals) / math.sqrt(k) if k > 1 else ses[0]


def _check_row(cells: dict, table: str, rid: str, entries: list[tuple], sources: list[str]):
    """Every column of a seeds-table row against the hand computation; deltas to Base."""
    cols = [c.id for c in next(t for t in load_spec(ARITH).tables if t.id == table).columns]
    for col in cols:
        c = cells[table, rid, col]
        assert c["source"] == ", ".join(f"{s}/results.json" for s in sources), (rid, col)
        mean, se = _by_hand(entries, col)
        assert float(c["value"]) == pytest.approx(mean, abs=1e-6), (rid, col)
        assert (c["stderr"] == "") if se is None else \
            float(c["stderr"]) == pytest.approx(se, abs=1e-3), (rid, col)
        if col in ("arith", "arith_ood"):
            base = 100 * BASE[col == "arith_ood"]
            assert float(c["delta"]) == pytest.approx(mean - base, abs=1e-6), (rid, col)
        else:
            assert c["delta"] == "", (rid, col)  # gains and fields carry no change to Base


def test_seeds_table_means_se_gains(cells):
    for name, seeds in SEEDS.items():
        rid = {"dapo": "dapo_mc"}.get(name, name)
        _check_row(cells, "seeds", rid, list(seeds.values()),
                   [f"seeds/s{s}/{name}" for s in seeds])
    base = cells["seeds", "base", "arith"]
    assert base["source"] == "seeds/s0/base/results.json" and base["delta"] == ""
    assert cells["seeds", "base", "gain_arith"]["value"] == ""  # no gain over itself


def test_seeds_table_cells_bold_n_notes(md):
    t = _section(md, "seeds")
    assert _labels(t)[0] == "Base (reference policy)"
    assert md_row(t, "Base (reference policy)") == ["55.0 ± 1.1", "–", "25.0 ± 1.4", "–", "–", "–"]
    # DAPO: 64.0, 61.0, 65.5 -> 63.5, sd 2.29, se 1.32; best accuracy, so bold
    dapo = md_row(t, "DAPO (MC values; Liu et al., step-level)")
    assert dapo == ["**63.5** ± 1.3 (+8.5)", "+2.0 ± 0.6", "**30.7** ± 0.9 (+5.7)", "+1.5 ± 0.6",
                    "3.39e+09", "1.027"]
    assert md_row(t, "GRPO")[:2] == ["62.0 ± 1.1 (+7.0)", "**+7.2** ± 0.8"]  # one seed: own se
    assert md_row(t, "DAPO (critic; Liu et al., step-level)")[0] == "61.5 ± 1.5 (+6.5)"
    assert md_row(t, "n")[:4] == ["2000", "2000", "1000", "1000"]
    assert ("- DAPO (MC values; Liu et al., step-level): 3 seeds (0, 1, 2); paired gain ID "
            "per seed +2.0 ± 0.6, +1.0 ± 0.5, +3.0 ± 0.7; paired gain OOD per seed "
            "+1.5 ± 0.9, +0.5 ± 1.0, +2.5 ± 1.1.") in t
    assert "- DAPO (critic; Liu et al., step-level): 2 seeds (0, 1);" in t
    assert "Provenance: commit: fixture0000000000." in t
    assert "arith: math 1" in t and "sampling: max_new_tokens=64, n=1" in t
    assert "no result file matched" not in t and "broken" not in t


def test_critic_table_fields_and_gains(md, cells):
    rows = {"mc": "default/dapo", "c1x": "critic/c1x", "c4x": "critic/c4x",
            "c4x_e4": "critic/c4x-e4-step"}
    for rid, path in rows.items():
        brier, const, ece, g, go, tokens = CRITIC[path]
        got = {col: cells["critic", rid, col] for col in
               ("skill", "brier", "ece", "kept", "gain_arith", "gain_ood", "flops")}
        assert {c["source"] for c in got.values()} == {f"{path}/results.json"}
        assert float(got["skill"]["value"]) == pytest.approx(1 - brier / const)
        assert float(got["brier"]["value"]) == brier and float(got["ece"]["value"]) == ece
        assert got["kept"]["value"] == str(KEPT[path])  # iterations.0.advantages.kept_states
        for col, (d, se) in (("gain_arith", g), ("gain_ood", go)):
            assert float(got[col]["value"]) == pytest.approx(100 * d)
            assert float(got[col]["stderr"]) == pytest.approx(100 * se)
        assert float(got["flops"]["value"]) == _flops(tokens)
    t = _section(md, "critic")
    assert md_row(t, "DAPO (critic), critic 1x, 1 epoch") == [
        "-0.028", "0.1450", "0.160", "5", "-0.2 ± 0.4", "+0.1 ± 0.8", "3.30e+09"]
    assert md_row(t, "DAPO (critic), critic 4x, 1 epoch")[4] == "**+1.1** ± 0.4"  # best gain ID
    assert md_row(t, "DAPO (critic), critic 4x, 4 epochs + step labels")[:6] == [
        "+0.150", "0.1200", "0.060", "93", "+0.9 ± 0.4", "**+1.6** ± 0.8"]
    assert md_row(t, "DAPO (MC values), the default run: critic 1x, 1 epoch (trained, not used)"
                )[3] == "1,342"  # a field column: formatted, not ranked (no bold)
    assert cells["critic", "c1x_e4", "skill"]["kind"] == "missing"
    assert "no result file matched path=critic/c1x-e4-step/*" in t
    assert "(+" not in t and "(-" not in t  # no base row: no deltas


def test_beta_rows_by_value_over_seeds(md, cells):
    t = _section(md, "beta")
    # numeric order (10.0 last), one row per beta whatever the seed
    assert _labels(t) == ["Base (reference policy)"] + [
        f"DAPO (MC values), β = {b}" for b in ("0.5", "1.0", "2.0", "10.0")]
    for b in (0.5, 2.0, 10.0):
        seeds = sorted(s for s, bb in BETA if bb == b)
        _check_row(cells, "beta", f"beta={b}", [BETA[s, b] for s in seeds],
                   [f"beta/s{s}/beta{b}" for s in seeds])
    # beta 1.0 is the seeds' own DAPO runs, seeds 0 and 1 only (not seed 2, not dapo_critic)
    dapo = SEEDS["dapo"]
    _check_row(cells, "beta", "beta=1.0", [dapo[0], dapo[1]],
               ["seeds/s0/dapo", "seeds/s1/dapo"])
    assert md_row(t, "DAPO (MC values), β = 1.0")[0] == "62.5 ± 1.5 (+7.5)"
    assert md_row(t, "DAPO (MC values), β = 2.0")[0] == "**62.7** ± 0.7 (+7.7)"
    assert "- DAPO (MC values), β = 10.0: 1 seed (0); paired gain ID per seed -0.4 ± 0.5" in t


def test_iteration_rows_cumulative_flops(md, cells):
    t = _section(md, "iterations")
    assert _labels(t) == ["Base (reference policy)", "DAPO (MC values) iteration 1",
                          "DAPO (MC values) iteration 2"]
    for k in (1, 2):
        c = {col: cells["iterations", f"iteration={k}", col]
             for col in ("arith", "arith_ood", "flops")}
        assert c["arith"]["source"] == ", ".join(
            f"iter/s{s}/it2/results.json#iter{k}" for s in ITER)
        acc = [100 * (a - 0.02 * (2 - k)) for a, _, _ in ITER.values()]
        assert float(c["arith"]["value"]) == pytest.approx(statistics.mean(acc))
        assert float(c["arith"]["stderr"]) == pytest.approx(statistics.stdev(acc) / math.sqrt(2))
        # cumulative: iteration k counts the ledger stages it1.* .. it<k>.*
        assert float(c["flops"]["value"]) == pytest.approx(
            statistics.mean(_flops(tok, k) for _, _, tok in ITER.values()))
    assert md_row(t, "DAPO (MC values) iteration 1") == [
        "63.0 ± 1.0 (+8.0)", "30.0 ± 1.0 (+5.0)", "3.63e+09"]
    assert md_row(t, "DAPO (MC values) iteration 2")[::2] == ["**65.0** ± 1.0 (+10.0)", "7.26e+09"]


def test_plots_draw_the_spec_runs(runs):
    from dapo_bench.leaderboard.plots import beta_ablation, calibration, training_curves
    from dapo_bench.leaderboard.runs import collect
    from dapo_bench.leaderboard.spec import Plot

    spec = load_spec(ARITH)
    plots = {p.id: p for p in spec.plots}
    loaded, _ = collect(spec.inputs, runs)

    def lines(fig):
        return {x.get_label(): x for x in fig.axes[0].get_lines()
                if not x.get_label().startswith("_")}

    # seed 0's runs, labelled by run id (label_by: run_id), so DAPO's two estimators differ
    assert sorted(lines(training_curves(plots["training_curves"], loaded))) == [
        f"fixture-s0-{m}" for m in ("dapo", "dapo_critic", "dpo", "grpo", "ppo", "rft", "sft")]
    # DAPO logs each iteration's steps from 0: one line per iteration
    it = training_curves(Plot(id="c", kind="training_curves", metric="loss",
                              match={"path": "iter/s0/*"}), loaded)
    assert sorted(lines(it)) == ["dapo it1", "dapo it2"]
    beta = beta_ablation(plots["beta_ablation"], loaded)
    (dapo,) = beta.axes[0].containers  # an errorbar: its label is on the container
    assert dapo.get_label() == "DAPO" and "base (55.0)" in lines(beta)
    assert list(dapo.lines[0].get_xdata()) == [0.5, 1.0, 2.0, 10.0]  # seed 0 only
    cal = lines(calibration(plots["calibration"], loaded))
    brier, const, ece = CRITIC["default/dapo"][:3]
    label = f"dapo (brier={brier:.3f}, brier_skill={1 - brier / const:.3f}, ece={ece:.3f})"
    assert sorted(cal) == [label, "perfect"]  # the default run only, not the critic study
    assert list(cal[label].get_xdata()) == [p for _, p, _ in BINS.values()]  # empty bins dropped


def test_bad_files_skipped_and_listed(runs, rendered, md):
    res, out = rendered
    assert [s.path for s in res.skipped] == BAD
    assert "- `seeds/s1/broken/results.json`: 1: invalid JSON" in md
    assert "- `critic/partial/results.json`: field 'model' missing" in md
    assert str(out) not in md and str(runs) not in md  # no machine-specific paths


def test_named_bad_file_is_an_error(runs, tmp_path):
    spec = tmp_path / "lb.yaml"
    spec.write_text(
        f"inputs: {{dir: {runs}, files: [seeds/s1/broken/results.json]}}\n"
        "tables: [{id: t, columns: [{id: a, task: arith}], rows: [{match: {method: sft}}]}]\n")
    with pytest.raises(UserError, match="seeds/s1/broken/results.json:1: invalid JSON"):
        render(spec, out_dir=tmp_path)


def test_render_twice_identical_bytes(runs, rendered, tmp_path):
    res, out = rendered
    again = render(ARITH, runs, tmp_path)
    names = sorted(p.name for p in res.written)
    assert names == sorted(p.name for p in again.written)
    assert sum(n.endswith(".png") for n in names) == 4 and res.not_drawn == []
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


def test_manifest_hashes_inputs(runs, rendered):
    _, out = rendered
    man = json.loads((out / "arith.manifest.json").read_text())
    good = {p.relative_to(runs).as_posix() for p in runs.rglob("results.json")} - set(BAD)
    assert set(man["inputs"]) == good and len(good) == 1 + 13 + 5 + 2 + 4
    assert all(len(h) >= 16 for h in man["inputs"].values())
    assert set(man["skipped"]) == set(BAD)
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
        f"inputs: {{dir: {runs}, globs: ['beta/*/*/results.json']}}\n"
        "tables: [{id: t, columns: [{id: a, task: arith}], rows: [{match: {method: dapo}}]}]\n")
    with pytest.raises(UserError, match=r"5 result files match \(beta/s0/beta0.5/results.json, "
                                        r"beta/s0/beta10.0/results.json"):
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
        f"inputs: {{dir: {runs}, globs: ['seeds/*/*/results.json']}}\n"
        "tables:\n"
        "  - id: t\n"
        "    decimals: 2\n"
        "    columns: [{id: m, label: MATH, task: arith}]\n"
        "    rows: [{id: mine, label: mine, base: true, match: {method: grpo}}]\n"
        f"    reference: [{{spec: {PAPER}, table: table1,\n"
        "      rows: [llama31_8b_instruct, llama31_8b_instruct_dapo], columns: {m: math}}]\n")
    render(spec, out_dir=tmp_path)
    md = (tmp_path / "lb.md").read_text()
    assert "| mine | 62.00 ± 1.09 |" in md
    assert "| *Llama-3.1-8B-Instruct (published)* | 49.42 |" in md
    assert "| *+ DAPO (published)* | 53.62 (+4.20) |" in md  # delta among published rows
    assert "published numbers in italics" in md
    csv_lines = (tmp_path / "lb.csv").read_text().splitlines()
    assert "t,ref:llama31_8b_instruct_dapo,+ DAPO (published),published,published,m,53.62,,4.2,,0" \
        in csv_lines


def test_cli_renders_and_warns_on_stderr(runs, tmp_path):
    r = CliRunner().invoke(app, ["leaderboard", str(ARITH), "--runs", str(runs),
                                 "--out", str(tmp_path), "--no-plots"])
    assert r.exit_code == 0, r.output
    assert "skipped seeds/s1/broken/results.json" in r.output
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


def test_a_cheat_rate_column_where_a_run_had_canaries(runs, tmp_path):
    """A run trained with --canaries gives its tables a cheat-rate column; the others (and
    every table of runs without canaries: the committed ones) stay as they were."""
    mine = tmp_path / "runs"
    shutil.copytree(runs, mine)
    res = mine / "seeds" / "s0" / "grpo" / "results.json"
    data = json.loads(res.read_text())
    data["canaries"] = {"n": 400, "rewarded": 3, "cheat_rate": 0.0075, "items": 50,
                        "examples": []}
    res.write_text(json.dumps(data))
    out = tmp_path / "out"
    render(ARITH, mine, out)
    md = (out / "arith.md").read_text()
    seeds = _section(md, "seeds")
    assert "cheat rate (canaries)" in seeds
    assert md_row(seeds, "GRPO")[-1] == "0.75%" and md_row(seeds, "PPO")[-1] == "–"
    assert "cheat rate" not in _section(md, "critic")
    with open(out / "arith.csv", newline="") as f:
        rate = [x for x in csv.DictReader(f) if x["column"] == "cheat_rate"]
    assert {x["table"] for x in rate} == {"seeds"}
