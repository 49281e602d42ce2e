"""A real TRL GRPOTrainer trains with ``dapo_bench.rewards.math_reward`` on CPU, and the rewards
it logged are the math verifier's verdicts on the same completions (trl from the dev extra)."""

import math

import pytest

trl = pytest.importorskip("trl", reason="trl is in the dev extra: pip install -e .[dev]")


def test_grpo_trainer_logs_the_verifiers_verdicts(tmp_path):
    import torch
    from dapo_bench.verifiers.math import verify
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from dapo_bench.arith import PROMPT_TEMPLATE, make_split
    from dapo_bench.rewards import math_reward
    from dapo_bench.toy import default_model_path

    torch.manual_seed(0)
    path = default_model_path()  # the packaged tiny arith policy (0.66M parameters)
    rows = make_split("rl_train", 8)
    data = Dataset.from_list([{"prompt": PROMPT_TEMPLATE.format(question=r["question"]),
                               "answer": r["answer"]} for r in rows])
    args = trl.GRPOConfig(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=8,
        num_generations=4, max_completion_length=48, learning_rate=1e-3, logging_steps=1,
        report_to="none", use_cpu=True, save_strategy="no", seed=0, temperature=1.0,
        dataloader_num_workers=0)
    trainer = trl.GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(path),
        processing_class=AutoTokenizer.from_pretrained(path),
        reward_funcs=[math_reward], args=args, train_dataset=data)
    trainer.train()

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
