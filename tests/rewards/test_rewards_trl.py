"""A real TRL GRPOTrainer trains with ``dapo_bench.rewards.math_reward`` on CPU (the training
block of docs/rewards.md, run as shown), and the rewards it logged are the math verifier's
verdicts on the same completions (trl from the dev extra)."""

import math

import pytest
from _snippets import python_blocks

pytest.importorskip("trl", reason="trl is in the dev extra: pip install -e .[dev]")


def test_grpo_trainer_logs_the_verifiers_verdicts(tmp_path, monkeypatch):
    from dapo_bench.verifiers.math import verify

    from dapo_bench.arith import PROMPT_TEMPLATE

    (block,) = [b for b in python_blocks("rewards.md") if "GRPOTrainer(" in b]
    monkeypatch.chdir(tmp_path)  # the block's output_dir
    ns: dict = {}
    exec(compile(block, "docs/rewards.md", "exec"), ns)  # noqa: S102 - the page's own code
    trainer, rows = ns["trainer"], ns["rows"]

    gold = {PROMPT_TEMPLATE.format(question=r["question"]): r["answer"] for r in rows}
    prompts, completions = list(trainer._logs["prompt"]), list(trainer._logs["completion"])
    logged = list(trainer._logs["rewards"]["math_reward"])
    assert len(completions) == len(logged) == 8  # the last generation batch: 2 prompts x 4
    verdicts = [verify(c, gold[p]) for p, c in zip(prompts, completions)]
    assert logged == [v.reward for v in verdicts]
    assert list(trainer._logs["extra"]["math_reward_reason"]) == [v.reason for v in verdicts]
    assert set(logged) == {0.0, 1.0}  # sampled at temperature 1: some right, some wrong
    steps = [h for h in trainer.state.log_history if "rewards/math_reward/mean" in h]
    assert len(steps) == 2
    assert math.isclose(steps[-1]["rewards/math_reward/mean"], sum(logged) / len(logged),
                        abs_tol=1e-6)
    assert all(h["dapo_bench/math_reward/infra_errors"] == 0 for h in steps)
