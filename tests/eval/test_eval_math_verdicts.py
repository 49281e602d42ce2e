"""The reward path uses the verifier's verdicts: a boxed multi-answer response to an
OlympiadBench row is scored correct by ``dapo-bench eval`` (the evaluate runner), by
``Task.score`` and by the training reward (``methods.scorer.Scorer``); a response that boxes
only one of the two answers, or hedges on a single-answer row, is scored wrong everywhere."""

import dataclasses

import pytest
from _canned import _canned  # a Generator answering each prompt with a fixed text
from _data import DATA

from dapo_bench.eval import evaluate
from dapo_bench.tasks import load_task

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"{DATA} absent (benchmark files)")

TWO = "1664"  # final_answer ['$69$,$84$'], is_multiple_answer
ONE = "1606"  # final_answer ['2']
RIGHT = {TWO: r"So the two values are $n=\boxed{69}$ and $n=\boxed{84}$.",
         ONE: r"Two moves suffice and one does not: $\boxed{2}$."}
WRONG = {TWO: r"So the value is $n=\boxed{69}$.",
         ONE: r"It is $\boxed{2}$ or $\boxed{3}$."}


@pytest.fixture(scope="module")
def task():
    t = load_task("olympiadbench", data_dir=DATA)
    probs = [p for p in t.problems if p.id in (TWO, ONE)]
    assert {p.id for p in probs} == {TWO, ONE}
    return dataclasses.replace(t, problems=probs)


@pytest.mark.parametrize(("texts", "acc"), [(RIGHT, 1.0), (WRONG, 0.0)])
def test_eval_scores_boxed_multi_answers(task, texts, acc, tmp_path):
    answers = {task.prompt(p): texts[p.id] for p in task.problems}
    res = evaluate(_canned()(answers), [task], run_dir=tmp_path / "run", quiet=True)
    assert res["tasks"]["olympiadbench"]["metrics"]["acc"]["value"] == acc


def test_task_score_and_training_reward_agree(task):
    from dapo_bench.methods.scorer import Scorer

    texts = [RIGHT[p.id] for p in task.problems] + [WRONG[p.id] for p in task.problems]
    probs = list(task.problems) * 2
    with task.verifier() as v:
        verdicts = task.score(v, texts, probs)
    assert [v.passed for v in verdicts] == [True, True, False, False]
    two = next(v for v, p in zip(verdicts, probs) if p.id == TWO)
    assert two.extracted == "69, 84" and two.details["answer_from"] == "box"
    scorer = Scorer(task)
    try:
        assert [v.reward for v in scorer(texts, [p.id for p in probs])] == [1.0, 1.0, 0.0, 0.0]
    finally:
        scorer.close()
