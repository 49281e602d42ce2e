"""The exploit zoo that every eval runs through its verifiers (dapo_bench/eval/zoo.py): the real
verifiers pass it, a verifier that pays an attack stops the eval loudly (RunStopped, nothing
scored). The code zoo runs attacking programs: only in a PID namespace (``-m hostile``)."""

import os

import pytest
from dapo_bench.verifiers.base import Verdict

from dapo_bench.errors import RunStopped
from dapo_bench.eval import zoo
from dapo_bench.tasks import load_task


class PaysNaN:
    """A math verifier with a planted hole: any answer ending in "nan" passes."""

    name, version = "pays_nan", "0"

    def verify_batch(self, predictions, golds, finished=None):
        return [Verdict(str(p).strip().endswith("nan"), "ok") for p in predictions]

    def close(self):
        pass


def test_the_math_verifier_passes_the_math_zoo(monkeypatch):
    monkeypatch.setattr(zoo, "_PASSED", set())
    task = load_task("arith", limit=1)
    with task.verifier() as v:
        info = zoo.check(task, v)
        assert info["attacks"] == len(zoo.MATH_ATTACKS)
        assert zoo.check(task, v)["attacks"] == 0  # once per process per verifier


def test_a_verifier_that_pays_an_attack_stops_the_eval(monkeypatch, tmp_path):
    from dapo_bench.eval import evaluate
    from dapo_bench.tasks.task import Task
    from dapo_bench.toy import default_model_path

    task = load_task("arith", limit=1)
    with pytest.raises(RunStopped, match=r"exploit zoo: .*passed 1 attack\(s\) \('nan'\)"):
        zoo.check(task, PaysNaN())
    monkeypatch.setattr(Task, "make_verifier", lambda self, **kw: PaysNaN())
    with pytest.raises(RunStopped, match="exploit zoo"):
        evaluate(default_model_path(), ["arith"], run_dir=str(tmp_path / "e"), limit=2)
    assert not (tmp_path / "e" / "results.json").exists()


@pytest.mark.hostile
def test_the_code_verifier_passes_the_code_zoo(monkeypatch):
    if os.getpid() != 1:
        pytest.skip("attacking programs run only as init of their own PID namespace "
                    "(unshare --pid --fork --mount-proc python3 -m pytest -m hostile)")
    from dapo_bench.verifiers.code import CodeVerifier

    monkeypatch.setattr(zoo, "_PASSED", set())
    from dapo_bench.tasks import TASKS
    from dapo_bench.tasks.task import Task

    task = Task(TASKS.get("mbpp"), [], "zoo")  # the spec is all the zoo uses: no data needed
    v = CodeVerifier()
    try:
        info = zoo.check(task, v)
    finally:
        v.close()
    assert info["attacks"] == len(zoo.EVAL_ATTACKS) >= 10 and info["seconds"] < 30, info
