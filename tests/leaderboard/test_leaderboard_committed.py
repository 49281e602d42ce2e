"""The committed leaderboards re-render byte-identically from the committed files, and the
paper's reference numbers are the ones read from the paper (with its known inconsistencies)."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from dapo_bench.leaderboard import default_specs, render
from dapo_bench.leaderboard.spec import load_spec, resolve

ROOT = Path(__file__).resolve().parents[2]
SPECS = default_specs(ROOT / "leaderboards")


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_committed_outputs_rerender_identically(spec, tmp_path):
    manifest = spec.with_name(f"{spec.stem}.manifest.json")
    if not manifest.is_file():
        pytest.skip(f"{spec.name} has not been rendered and committed yet (no {manifest.name})")
    committed = json.loads(manifest.read_text())
    res = render(spec, out_dir=tmp_path)
    fresh = json.loads((tmp_path / manifest.name).read_text())
    assert fresh["inputs"] == committed["inputs"], "committed result files changed"
    import matplotlib

    same_mpl = committed["matplotlib"] in (None, matplotlib.__version__)
    for p in res.written:
        if p.suffix == ".png" and not same_mpl:
            continue  # PNG bytes depend on the matplotlib/FreeType version
        assert p.read_bytes() == spec.with_name(p.name).read_bytes(), f"{p.name} differs"
    if not same_mpl:
        pytest.skip(f"tables identical; PNGs not compared (rendered with matplotlib "
                    f"{committed['matplotlib']}, installed {matplotlib.__version__})")


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_committed_inputs_are_tracked_by_git(spec):
    # A result file the manifest names but .gitignore hides renders here and fails on a clean
    # clone (CI): the critic study's run directories once matched the weights rule `critic/`.
    manifest = spec.with_name(f"{spec.stem}.manifest.json")
    if not manifest.is_file() or shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a rendered manifest and a git checkout")
    loaded = load_spec(spec)
    if loaded.inputs is None:
        pytest.skip(f"{spec.name} reads no result files")
    runs = resolve(loaded, loaded.inputs.dir).resolve()
    inputs = json.loads(manifest.read_text())["inputs"]
    names = [str((runs / rel).relative_to(ROOT)) for rel in inputs]
    if not names:
        pytest.skip(f"{spec.name} has no committed result files yet")
    # check-ignore exits 0 when some path is ignored, 1 when none is, 128 on an error.
    out = subprocess.run(["git", "check-ignore", "--no-index", *names], check=False, cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode in (0, 1), out.stderr
    ignored = out.stdout.split()
    assert not ignored, f"{spec.name} reads result files that .gitignore hides: {ignored}"


def test_paper_numbers_and_printed_inconsistencies(tmp_path):
    spec = load_spec(ROOT / "leaderboards" / "paper.yaml")
    t = {x.id: x for x in spec.tables}
    rows = {r.id: r for r in t["table1"].rows}
    assert rows["llama31_8b_instruct"].values["math"] == 49.42
    assert rows["llama31_8b_instruct_dapo"].values["math"] == 53.62
    assert rows["qwen25_math_7b_instruct"].values["math"] == 83.42
    assert rows["qwen25_math_7b_instruct_dapo"].values["math"] == 84.86
    t3 = {r.id: r.values for r in t["table3"].rows}
    assert (t3["llama31_8b_instruct"]["grpo"], t3["llama31_8b_instruct"]["ppo"]) == (52.28, 52.41)
    assert len(t["table1"].rows) == 14 and len(t["table1"].columns) == 5
    render(spec.path, out_dir=tmp_path)
    md = (tmp_path / "paper.md").read_text()
    flagged = [x for x in md.splitlines() if x.startswith("- Row ") and "printed change" in x]
    # Exactly the two printed deltas that disagree with the printed values by more than 0.01.
    assert len(flagged) == 2, flagged
    assert "llama31_8b_instruct_dapo (+ DAPO), College Math: printed change +1.63" in flagged[0]
    assert "qwen2_math_7b_instruct (Qwen2-Math-7B-Instruct), +GRPO: printed change +0.46 " \
           "but the printed values give +0.48" in flagged[1]


def test_paper_tables_consistent_across_tables():
    # The same published number appears identically wherever the paper repeats it.
    t = {x.id: {r.id: r.values for r in x.rows} for x in load_spec(
        ROOT / "leaderboards" / "paper.yaml").tables}
    for model, col_base in (("llama31_8b_instruct", "base"), ("qwen2_math_7b_instruct", "base")):
        assert t["table1"][model]["math"] == t["table3"][model][col_base]
        assert t["table1"][model + "_dapo"]["math"] == t["table3"][model]["dapo"]
    assert t["table4"]["skywork_math_llama"]["iter2"] == t["table10"]["skywork_math_llama_it2"]["math"]
    assert t["table5"]["skywork_math_llama"]["b0_01"] == t["table1"]["skywork_math_llama_dapo"]["math"]
    assert t["table6"]["qwen2_math_7b_instruct"]["n16"] == t["table1"]["qwen2_math_7b_instruct_dapo"]["math"]
