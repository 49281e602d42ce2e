"""Every task of the math and code suites runs end to end from ../shared/data with a tiny real
model (limit 5) and writes a valid results file; the code tasks score through the sandbox."""


import pytest
from _canned import _canned
from _data import DATA

from dapo_bench.eval import evaluate
from dapo_bench.results import load_results
from dapo_bench.tasks import SUITES, load_task

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"{DATA} absent (benchmark files)")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from dapo_bench.models import save_policy
    from dapo_bench.toy.model import tiny_llama
    from dapo_bench.toy.tokenizer import build_char_tokenizer

    tok = build_char_tokenizer()
    out = tmp_path_factory.mktemp("tiny") / "model"
    save_policy(tiny_llama(tok, d=32, layers=2, heads=2, ffn=64), tok, out)
    return str(out)


@pytest.mark.parametrize("suite", ["math", "code"])
def test_suite_limit5_writes_valid_results(suite, tiny_model, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    names = list(SUITES.get(suite))
    evaluate(tiny_model, names, run_dir=tmp_path / suite, limit=5, max_new_tokens=16,
             data_dir=DATA, quiet=True)
    res = load_results(tmp_path / suite / "results.json")
    assert set(res["tasks"]) == set(names)
    for name, t in res["tasks"].items():
        assert t["n_problems"] == 5 and t["n_samples"] == 5, name
        assert 0.0 <= t["metrics"]["acc"]["value"] <= 1.0
        assert sum(t["reasons"].values()) == 5
        assert t["source"].startswith(str(DATA))
        assert t["n_problems_total"] > 5 and len(t["rows_hash"]) == 16
    avg = res["suites"][suite]
    assert avg["tasks"] == names and avg["n_problems"] == 5 * len(names)
    assert set(avg["macro"]) == {"acc"} == set(avg["micro"])


@pytest.mark.parametrize("name,solution", [
    ("humaneval", lambda row: "```python\n" + row["canonical_solution"] + "\n```"),  # body only
    ("mbpp", lambda row: "Here it is:\n```python\n" + row["code"] + "\n```"),
    ("leetcode", lambda row: "```python\n" + row["solutions"] + "\n```"),
])
def test_reference_solutions_score_through_the_task(name, solution, tmp_path):
    """A model that writes the reference solution gets full marks: code extraction, program
    assembly (HumanEval body completion) and the sandboxed verifier work together."""
    from dapo_bench.tasks.sources import read_file

    task = load_task(name, data_dir=DATA, limit=4)
    rows = read_file(DATA / task.spec.source.file)[:4]
    answers = {task.prompt(p): solution(r) for p, r in zip(task.problems, rows)}
    res = evaluate(_canned()(answers), [task], run_dir=tmp_path / name, quiet=True)
    assert res["tasks"][name]["metrics"]["acc"]["value"] == 1.0, res["tasks"][name]["reasons"]
