"""TRL's own GRPOTrainer tells a reward function which completions were cut off, and
``make_math_reward(stop_token_ids=[eos])`` reads it as TRL does: the completions it grades as
cut off are the ones TRL counts in its own ``completions/clipped_ratio``, and every reward is
the math verifier's verdict with that flag (a cut-off completion is credited only for a marked
answer). A real trainer on CPU (~25 s), so with the framework tests (``make test-interop``);
the plain reward is trained in ``make test`` (tests/rewards/test_rewards_trl.py).
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.interop


def test_trls_completion_ids_grade_cut_off_completions(tmp_path, monkeypatch):
    pytest.importorskip("trl", reason="trl is in the dev extra: pip install -e .[dev]")
    from dapo_bench.verifiers.math import verify
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from dapo_bench.arith import PROMPT_TEMPLATE, make_split
    from dapo_bench.rewards import make_math_reward
    from dapo_bench.toy import default_model_path

    monkeypatch.chdir(tmp_path)
    path = default_model_path()
    tok = AutoTokenizer.from_pretrained(path)
    gold = {PROMPT_TEMPLATE.format(question=r["question"]): r["answer"]
            for r in make_split("rl_train", 8)}
    reward = make_math_reward(stop_token_ids=[tok.eos_token_id, tok.pad_token_id])
    seen = []

    def math_reward(completions, **kwargs):  # what TRL passes, recorded
        out = reward(completions, **kwargs)
        seen.extend(zip(kwargs["prompts"], completions, kwargs["completion_ids"], out))
        return out

    args = GRPOConfig(output_dir="grpo", max_steps=2, per_device_train_batch_size=8,
                      num_generations=4, max_completion_length=48, learning_rate=1e-3,
                      logging_steps=1, report_to="none", use_cpu=True, save_strategy="no",
                      seed=0)
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(path),
                          processing_class=tok, reward_funcs=[math_reward], args=args,
                          train_dataset=Dataset.from_list([{"prompt": p, "answer": a}
                                                           for p, a in gold.items()]))
    trainer.train()
    assert len(seen) == 16
    finished = [ids[-1] in (tok.eos_token_id, tok.pad_token_id) for _, _, ids, _ in seen]
    clipped = [h["completions/clipped_ratio"] for h in trainer.state.log_history
               if "completions/clipped_ratio" in h]
    assert [8 * c for c in clipped] == [finished[:8].count(False), finished[8:].count(False)]
    assert 0 < finished.count(False) < 16  # some cut off, some finished: both graded
    assert [r for *_, r in seen] == [verify(c, gold[p], finished=f).reward
                                     for (p, c, _, _), f in zip(seen, finished)]
