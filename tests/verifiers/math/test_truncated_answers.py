"""A response cut off at the token cap earns a math reward only for an answer it marked (a box or
an answer phrase): in the verifier, in ``dapo-bench verify``, in eval and in the training
reward. A rerun of an eval logged by an older verifier version re-verifies its samples
without generating them again."""

import dataclasses
import json

import pytest
from _canned import Canned
from _data import DATA
from dapo_bench.verifiers.math import MathVerifier, verify

from dapo_bench.errors import UserError
from dapo_bench.eval import evaluate
from dapo_bench.generation.base import Completion, Generator
from dapo_bench.tasks import load_task

# MATH500 test/prealgebra/4333 as SmolLM2 wrote it at the 512-token cap: a loop that never
# answers, whose last number happens to be the gold (6)
RAMBLE = ("To find the least positive integer multiple of 30 we take the logarithm of $21420N$ "
          "with respect to $6$ and the logarithm of $21420N$ with respect to $6$ and")
CASES = [  # (text, finished, passed, reason, answer_from)
    (RAMBLE, True, True, "ok", "sentence"),
    (RAMBLE, False, False, "truncated", "sentence"),
    ("We add 2 and 4 to get 6 apples, then we", False, False, "truncated", "last_number"),
    ("We add 2 and 4 to get 6 apples, then we", True, True, "ok", "last_number"),
    (r"So $x = \boxed{6}$. Let us check this again: $6 \cdot 5 = 30$, and", False, True, "ok",
     "box"),
    ("The answer is 6. To check it, we compute 2 times 3 and then", False, True, "ok",
     "phrase"),
    ("**6** is what we find when we", False, False, "truncated", "bold"),
    ("First we note that the sum is", False, False, "truncated", "none"),
    ("First we note that the sum is", True, False, "no_answer", "none"),
]


@pytest.mark.parametrize(("text", "finished", "passed", "reason", "how"), CASES)
def test_a_cut_off_response_needs_a_marked_answer(text, finished, passed, reason, how):
    v = verify(text, "6", finished=finished, fallback_last_number=True)
    assert (v.passed, v.reason, v.details["answer_from"]) == (passed, reason, how)
    if reason == "truncated":
        assert v.extracted is None  # casts no maj@k vote


def test_batch_takes_one_flag_per_prediction():
    with MathVerifier(workers=1) as v:
        out = v.verify_batch([RAMBLE, RAMBLE], ["6", "6"], finished=[True, False])
        assert [x.reason for x in out] == ["ok", "truncated"]
        assert [x.passed for x in v.verify_batch([RAMBLE], ["6"])] == [True]  # default: finished
        with pytest.raises(UserError, match="1 predictions but 2 finished flags"):
            v.verify_batch([RAMBLE], ["6"], finished=[True, False])


def test_verify_command_reads_finish_reason(tmp_path, cli):
    f = tmp_path / "p.jsonl"
    rows = [{"prediction": RAMBLE, "gold": "6", "finish_reason": "length"},
            {"prediction": RAMBLE, "gold": "6", "finish_reason": "stop"},
            {"prediction": RAMBLE, "gold": "6"}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, err = cli(["verify", f, "--out", tmp_path / "o.jsonl"])
    assert code == 0, err
    out = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [o["reason"] for o in out] == ["truncated", "ok", "ok"]
    f.write_text(json.dumps({**rows[0], "finish_reason": "eos"}) + "\n")
    code, err = cli(["verify", f])
    assert code != 0 and f"{f}:1: field 'finish_reason' must be" in err


class Cut(Canned, Generator):
    """Every prompt answered with a fixed text that ended at the token cap."""

    def generate(self, prompts, params):
        return [[Completion(self.answers[p], 512, "length")] * params.n for p in prompts]


class NoGeneration(Cut):
    def generate(self, prompts, params):
        raise AssertionError("a re-verification must not generate")


@pytest.fixture()
def gsm8k():
    if not DATA.is_dir():
        pytest.skip(f"{DATA} absent (benchmark files)")
    return load_task("gsm8k", data_dir=DATA, limit=3)


def _answers(task):  # the gold as the last number of an unfinished text
    return {task.prompt(p): f"Adding these up we get {p.gold} and then we need to" for p in
            task.problems}


def test_eval_and_training_reward_see_the_finish_reason(gsm8k, tmp_path):
    from dapo_bench.methods.scorer import Scorer

    res = evaluate(Cut(_answers(gsm8k)), [gsm8k], run_dir=tmp_path / "run", quiet=True)
    t = res["tasks"]["gsm8k"]
    assert t["metrics"]["acc"]["value"] == 0.0 and t["reasons"] == {"truncated": 3}
    assert res["tasks"]["gsm8k"]["verifier"]["version"] == MathVerifier.version
    texts = list(_answers(gsm8k).values())
    ids = [p.id for p in gsm8k.problems]
    scorer = Scorer(gsm8k)
    try:
        assert [v.reward for v in scorer(texts, ids, [False] * 3)] == [0.0] * 3
        assert [v.reward for v in scorer(texts, ids, [True] * 3)] == [1.0] * 3
    finally:
        scorer.close()


def _age(run, version="2.0", passed=True):
    """Make the run look logged by an older verifier that passed every sample."""
    cfg = json.loads((run / "eval_config.json").read_text())
    cfg["tasks"]["gsm8k"]["verifier"]["version"] = version
    (run / "eval_config.json").write_text(json.dumps(cfg))
    rows = [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]
    for r in rows:
        for s in r["samples"]:
            s.update(passed=passed, reason="ok", extracted="old")
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def test_rerun_reverifies_samples_of_an_older_verifier_version(gsm8k, tmp_path, capsys):
    run = tmp_path / "run"
    evaluate(Cut(_answers(gsm8k)), [gsm8k], run_dir=run, quiet=True)
    old = _age(run)
    res = evaluate(NoGeneration(_answers(gsm8k)), [gsm8k], run_dir=run)
    assert "gsm8k: re-verifying the 3 logged problems" in capsys.readouterr().err
    assert res["tasks"]["gsm8k"]["reasons"] == {"truncated": 3}
    rows = [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 3  # rewritten in problem order, one line a problem
    assert [r["samples"][0]["reason"] for r in rows] == ["truncated"] * 3
    assert [r["seconds"] for r in rows] == [r["seconds"] for r in old]  # generation time kept
    cfg = json.loads((run / "eval_config.json").read_text())
    assert cfg["tasks"]["gsm8k"]["verifier"]["version"] == MathVerifier.version
    evaluate(NoGeneration(_answers(gsm8k)), [gsm8k], run_dir=run, quiet=True)  # nothing to do


def test_a_run_killed_while_reverifying_reverifies_again(gsm8k, tmp_path):
    run = tmp_path / "run"
    evaluate(Cut(_answers(gsm8k)), [gsm8k], run_dir=run, quiet=True)
    rows = _age(run)
    # one problem re-verified and appended before the kill; the config still says 2.0
    with (run / "samples.jsonl").open("a") as f:
        f.write(json.dumps({**rows[0], "samples": [{**rows[0]["samples"][0], "reason": "x"}]})
                + "\n")
    res = evaluate(NoGeneration(_answers(gsm8k)), [gsm8k], run_dir=run, quiet=True)
    assert res["tasks"]["gsm8k"]["reasons"] == {"truncated": 3}
    assert len((run / "samples.jsonl").read_text().splitlines()) == 3


def test_other_verifier_options_are_still_refused(gsm8k, tmp_path):
    run = tmp_path / "run"
    evaluate(Cut(_answers(gsm8k)), [gsm8k], run_dir=run, quiet=True)
    cfg = json.loads((run / "eval_config.json").read_text())
    cfg["tasks"]["gsm8k"]["verifier"].update(version="2.0", options={"timeout": 1.0})
    (run / "eval_config.json").write_text(json.dumps(cfg))
    with pytest.raises(UserError, match="the verifier settings differs"):
        evaluate(NoGeneration(_answers(gsm8k)), [gsm8k], run_dir=run, quiet=True)


def test_reverifying_keeps_rows_beyond_this_runs_problems(gsm8k, tmp_path):
    run = tmp_path / "run"
    evaluate(Cut(_answers(gsm8k)), [gsm8k], run_dir=run, quiet=True)
    _age(run)
    (run / "results.json").unlink()  # as after a kill: a smaller rerun is not refused
    two = dataclasses.replace(gsm8k, problems=gsm8k.problems[:2])
    res = evaluate(NoGeneration(_answers(gsm8k)), [two], run_dir=run, quiet=True)
    assert res["tasks"]["gsm8k"]["reasons"] == {"truncated": 2}
    rows = [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]
    assert [r["samples"][0]["reason"] for r in rows] == ["truncated", "truncated", "ok"]
    cfg = json.loads((run / "eval_config.json").read_text())  # the third is still 2.0's
    assert cfg["tasks"]["gsm8k"]["verifier"]["version"] == "2.0"
