"""The GPU model list (leaderboards/models.yaml) parses offline into the eval runs
bench/leaderboard_models.py would start, and a result file written where it writes one fills
that model's row (a fixture result, labelled as such; nothing is evaluated here)."""

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from dapo_bench.errors import UserError
from dapo_bench.leaderboard import render
from dapo_bench.results import SCHEMA_VERSION, write_results
from dapo_bench.tasks import SUITES

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "leaderboards" / "models.yaml"


def _mod():
    spec = importlib.util.spec_from_file_location("leaderboard_models",
                                                  ROOT / "bench" / "leaderboard_models.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass resolves its annotations through it
    spec.loader.exec_module(mod)
    return mod


def test_plan_lists_every_model_on_every_task():
    runs = _mod().plan(SPEC)
    models = {"Qwen/Qwen2.5-Math-1.5B-Instruct", "Qwen/Qwen2.5-Math-7B-Instruct",
              "meta-llama/Llama-3.1-8B-Instruct"}
    assert {(r.table, r.model) for r in runs} == {(t, m) for t in ("math", "code") for m in models}
    math = next(r for r in runs if r.table == "math")
    assert set(math.tasks) == set(SUITES.get("math"))  # the whole math suite, nothing else
    code = next(r for r in runs if r.table == "code")
    assert set(SUITES.get("code")) <= set(code.tasks) and "livecodebench" in code.tasks
    assert math.out == SPEC.parent / "runs" / "models" / "math"
    assert math.run_id == "qwen2.5-math-1.5b-instruct"
    cmd = math.command("vllm", 5, None)
    assert cmd[:3] == ["dapo-bench", "eval", "--tasks"] and cmd[cmd.index("--limit") + 1] == "5"
    assert cmd[cmd.index("--backend") + 1] == "vllm"


def test_limit_runs_go_elsewhere_and_dry_run_runs_nothing(capsys, tmp_path, monkeypatch):
    mod = _mod()
    monkeypatch.chdir(tmp_path)
    assert {r.out for r in mod.plan(SPEC, limit=5)} == {
        Path("runs/models-limit5/math"), Path("runs/models-limit5/code")}
    assert mod.main([str(SPEC), "--dry-run", "--limit", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 7 and lines[-1].endswith("--runs runs/models-limit5 --out "
                                                  "runs/models-limit5")
    assert not (tmp_path / "runs").exists()


def test_a_row_whose_path_misses_the_run_dir_is_refused(tmp_path, capsys):
    bad = tmp_path / "models.yaml"
    shutil.copy(ROOT / "leaderboards" / "paper.yaml", tmp_path / "paper.yaml")
    bad.write_text(SPEC.read_text().replace('path: "code/*"}}', 'path: "math/*"}}', 1))
    with pytest.raises(UserError, match=r"tables\.code\.rows\.qwen15: match\.path"):
        _mod().plan(bad)
    assert _mod().main([str(bad), "--dry-run"]) == 2
    assert "does not select code/qwen2.5-math-1.5b-instruct" in capsys.readouterr().err


def test_a_result_where_the_script_writes_fills_its_row(tmp_path):
    for name in ("models.yaml", "paper.yaml"):
        shutil.copy(ROOT / "leaderboards" / name, tmp_path / name)
    run = next(r for r in _mod().plan(tmp_path / "models.yaml")
               if r.table == "math" and "7B" in r.model)
    tasks = {t: {"version": "1", "hash": "fixture", "prompt_template": "fixture",
                 "verifier": {"name": "math", "version": "2"}, "n_problems": 4,
                 "n_samples": 4, "generated_tokens": 40,
                 "metrics": {"acc": {"value": 0.75, "stderr": 0.25}}} for t in run.tasks}
    write_results(run.out / run.run_id, {
        "schema_version": SCHEMA_VERSION, "run_id": run.run_id, "kind": "eval",
        "method": "base", "backend": "vllm", "seed": 0, "tasks": tasks,
        "model": {"path": run.model, "hash": f"hub:{run.model}", "n_params": 7,
                  "name": "fixture"},
        "provenance": {"git_commit": "fixture", "packages": {}, "started_at": "fixture",
                       "wall_seconds": 1.0}})
    render(tmp_path / "models.yaml", out_dir=tmp_path, draw_plots=False)
    md = (tmp_path / "models.md").read_text()
    row = next(x for x in md.splitlines() if x.startswith("| Qwen2.5-Math-7B-Instruct (measured)"))
    assert row.count("75.00 ± 25.00") == 7
    code_row = [x for x in md.splitlines() if x.startswith("| Qwen2.5-Math-7B-Instruct (meas")][1]
    assert "75.0" not in code_row  # the math run does not leak into the code table
