"""The GPU model list (leaderboards/models.yaml) parses offline into the eval runs
bench/leaderboard_models.py would start, and a result file written where it writes one fills
that model's row (a fixture result, labelled as such); and the command itself, run on CPU with a
tiny local model in place of a hub model (--limit 1, the benchmark files of ../shared/data),
evaluates every task of both tables and renders the quick-pass tables."""

import shutil
from pathlib import Path

import pytest
from _bench import bench_script
from _data import DATA

from dapo_bench.errors import UserError
from dapo_bench.leaderboard import render
from dapo_bench.results import SCHEMA_VERSION, write_results
from dapo_bench.tasks import SUITES

pytestmark = pytest.mark.integration  # launches processes, trains or kills runs (conftest)

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "leaderboards" / "models.yaml"


def test_plan_lists_every_model_on_every_task():
    runs = bench_script("leaderboard_models").plan(SPEC)
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
    mod = bench_script("leaderboard_models")
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
        bench_script("leaderboard_models").plan(bad)
    assert bench_script("leaderboard_models").main([str(bad), "--dry-run"]) == 2
    assert "does not select code/qwen2.5-math-1.5b-instruct" in capsys.readouterr().err


def test_a_result_where_the_script_writes_fills_its_row(tmp_path):
    for name in ("models.yaml", "paper.yaml"):
        shutil.copy(ROOT / "leaderboards" / name, tmp_path / name)
    run = next(r for r in bench_script("leaderboard_models").plan(tmp_path / "models.yaml")
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


@pytest.mark.skipif(not DATA.is_dir(), reason=f"{DATA} absent (benchmark files)")
def test_the_command_evaluates_a_model_on_every_task_and_renders_its_rows(tmp_path, capsys,
                                                                         monkeypatch):
    """The documented GPU command, run for real on CPU (hf backend, --limit 1) with a tiny local
    model in place of the first hub model: one eval per table over all of its tasks, then the
    quick-pass tables with that model's row filled; a rerun skips both evals."""
    import yaml

    from dapo_bench.models import save_policy
    from dapo_bench.toy.model import tiny_llama
    from dapo_bench.toy.tokenizer import build_char_tokenizer

    tok = build_char_tokenizer()
    save_policy(tiny_llama(tok, d=32, layers=1, heads=2, ffn=64), tok, tmp_path / "tiny")
    spec = yaml.safe_load(SPEC.read_text())
    for table in spec["tables"]:  # the first measured row becomes the tiny model, others go
        rows = [r for r in table["rows"] if "match" not in r or r["id"] == "qwen15"]
        rows[0]["match"]["model.path"] = str(tmp_path / "tiny")
        table["rows"] = rows
        for col in list(table["columns"]):  # a task whose file is not here (LiveCodeBench)
            if col.get("task") and not _has_data(col["task"]):
                table["columns"].remove(col)
                for ref in table.get("reference", []):
                    ref["columns"].pop(col["id"], None)
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    shutil.copy(ROOT / "leaderboards" / "paper.yaml", tmp_path / "paper.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    argv = ["models.yaml", "--limit", "1", "--data-dir", str(DATA)]
    assert bench_script("leaderboard_models").main(argv) == 0
    out = tmp_path / "runs" / "models-limit1"
    assert sorted(p.relative_to(out).as_posix() for p in out.glob("*/*/results.json")) == \
        ["code/tiny/results.json", "math/tiny/results.json"]
    md = (out / "models.md").read_text()
    rows = [x for x in md.splitlines() if x.startswith("| Qwen2.5-Math-1.5B-Instruct (measured)")]
    cells = [[c.strip() for c in r.strip("|").split("|")[1:]] for r in rows]
    assert [len(c) for c in cells] == [len(t["columns"]) for t in spec["tables"]]
    assert len(cells[0]) == 7 and all("–" not in c for row in cells for c in row)
    capsys.readouterr()
    assert bench_script("leaderboard_models").main(argv) == 0  # a rerun evaluates nothing and renders the same tables
    assert capsys.readouterr().out.count("# done, skipped: ") == 2
    assert (out / "models.md").read_text() == md


def _has_data(task: str) -> bool:
    from dapo_bench.tasks import load_task

    try:
        load_task(task, data_dir=DATA, limit=1)
    except UserError as e:  # its file is not here: the test leaves the task out
        assert "not found" in str(e)
        return False
    return True
