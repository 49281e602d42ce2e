"""The baseline training loops move a tiny in-process model the way their objective says.

GRPO and PPO get a dense, easy reward (the fraction of digits in a short response) so that a
tiny random model shows learning within a few steps; DPO gets fixed pairs. Every loop charges
the compute ledger and stops at the FLOP budget.
"""

import torch

from dapo_bench.generation.hf import HFGenerator
from dapo_bench.ledger import Ledger
from dapo_bench.methods.dpo import DPOConfig, Pair, train_dpo
from dapo_bench.methods.grpo import GRPOConfig, train_grpo
from dapo_bench.methods.ppo import PPOConfig, token_values, train_ppo
from dapo_bench.models import count_params, save_policy
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training.batches import encode_pairs, sequence_logprobs
from dapo_bench.training.engine import OptimConfig
from dapo_bench.training.online import OnlinePolicy
from dapo_bench.training.rollouts import Request, TrainProblem, sample_groups
from dapo_bench.training.scope import Scope
from dapo_bench.training.value import ValueModel

torch.set_num_threads(1)
PROBLEMS = [TrainProblem(f"p{i}", f"{i}+{i}\n", str(2 * i)) for i in range(8)]


def digit_fraction(texts, ids, finished):
    return [sum(c.isdigit() for c in t) / max(len(t), 1) for t in texts]


def _policy(tmp_path, seed=0):
    tok = build_char_tokenizer()
    save_policy(tiny_llama(tok, seed=seed, d=32, layers=2, heads=2, ffn=64), tok, tmp_path / "m")
    gen = HFGenerator(str(tmp_path / "m"), batch_size=256)
    return OnlinePolicy(gen, str(tmp_path / "m"), tmp_path / "sync")


def _mean(rows, key, sl):
    vals = [r[key] for r in rows[sl]]
    return sum(vals) / len(vals)


def test_grpo_raises_reward_and_stops_at_budget(tmp_path):
    policy = _policy(tmp_path)
    cfg = GRPOConfig(prompts_per_step=8, samples_per_prompt=8, max_new_tokens=8,
                     minibatch_size=64, max_steps=25, kl_coef=0.01,
                     optim=OptimConfig(lr=3e-3))
    led = Ledger(n_params=count_params(policy.model))
    hist = train_grpo(policy, PROBLEMS, cfg, scope=Scope("train", led), score=digit_fraction)
    assert len(hist) == 25
    assert _mean(hist, "reward", slice(-5, None)) > _mean(hist, "reward", slice(0, 5)) + 0.1
    assert hist[-1]["kl"] > 0  # the policy moved away from pi_ref
    # a budget of 3 steps' worth stops the loop
    budget = 3 * hist[0]["flops"]
    policy2 = _policy(tmp_path / "b")
    led2 = Ledger(n_params=led.n_params, budget_flops=budget)
    hist2 = train_grpo(policy2, PROBLEMS, cfg, scope=Scope("train", led2), score=digit_fraction)
    assert 2 <= len(hist2) <= 4 and led2.exhausted()
    assert led2.stages["train"].n_inf > 0 and led2.stages["train"].n_train > 0


def test_ppo_raises_reward_and_fits_critic(tmp_path):
    policy = _policy(tmp_path)
    cfg = PPOConfig(rollout_batch=32, max_new_tokens=8, minibatch_size=32, max_steps=25,
                    ppo_epochs=2, critic_lr=3e-3, optim=OptimConfig(lr=3e-3))
    led = Ledger(n_params=count_params(policy.model))
    hist = train_ppo(policy, PROBLEMS, cfg, scope=Scope("train", led), score=digit_fraction)
    assert _mean(hist, "reward", slice(-5, None)) > _mean(hist, "reward", slice(0, 5)) + 0.1
    assert _mean(hist, "value_loss", slice(-5, None)) < _mean(hist, "value_loss", slice(0, 5))


def test_token_values_align_with_states():
    tok = build_char_tokenizer()
    vm = ValueModel.from_causal_lm(tiny_llama(tok, d=32, layers=1, heads=2, ffn=64))
    torch.nn.init.normal_(vm.head.weight)
    b = encode_pairs(tok, ["1+1\n", "2\n"], ["2", "44"], add_eos=True)
    with torch.no_grad():
        v = token_values(vm, b)
        # the value of the first response token's state = the head on the prompt's last token
        alone = vm(*(t[:1, :4] for t in (b.input_ids, b.attention_mask)))
    assert torch.allclose(v[0, 4], alone[0], atol=1e-5)
    assert (v * (1 - b.response_mask)).abs().max() == 0


def test_dpo_prefers_chosen_and_sample_groups_respects_budget(tmp_path):
    tok = build_char_tokenizer()
    model = tiny_llama(tok, d=32, layers=2, heads=2, ffn=64)
    texts = [(f"{i}+1\n", f"{i + 1}", f"{i + 2}") for i in range(8)]
    cb = encode_pairs(tok, [p for p, _, _ in texts], [c for _, c, _ in texts], add_eos=True)
    rb = encode_pairs(tok, [p for p, _, _ in texts], [r for _, _, r in texts], add_eos=True)
    ids = lambda t, eos=True: tok(t, add_special_tokens=False)["input_ids"] + (
        [tok.eos_token_id] if eos else [])
    pairs = [Pair(ids(p, False), ids(c), ids(r)) for p, c, r in texts]
    with torch.no_grad():
        margin0 = (sequence_logprobs(model, cb) - sequence_logprobs(model, rb)).mean()
    led = Ledger(n_params=count_params(model))
    cfg = DPOConfig(beta=0.5, epochs=40, batch_size=8, optim=OptimConfig(lr=3e-3))
    hist = train_dpo(model, tok, pairs, cfg, scope=Scope("train", led)).history
    with torch.no_grad():
        margin1 = (sequence_logprobs(model, cb) - sequence_logprobs(model, rb)).mean()
    assert margin1 > margin0 + 1.0
    assert hist[-1]["pair_acc"] == 1.0 and hist[-1]["loss"] < hist[0]["loss"]
    assert led.n_inf > 0 and led.n_train > 0  # reference pass + training

    policy = _policy(tmp_path)
    from dapo_bench.generation.base import SamplingParams

    led2 = Ledger(n_params=1)
    groups = sample_groups(policy.generator, [Request.for_problem(p) for p in PROBLEMS], 2,
                           digit_fraction, params=SamplingParams(temperature=1.0,
                                                                 max_new_tokens=4),
                           scope=Scope("s", led2), chunk_size=2,
                           until=lambda: led2.n_inf >= 1)
    assert len(groups) == 2 and len(groups[0].texts) == 2  # one chunk, then the cap stops it
