"""Every baseline loss and estimator against a hand computation on a tiny batch."""

import math

import pytest
import torch

from dapo_bench.errors import UserError
from dapo_bench.methods.dpo import build_pairs, dpo_loss
from dapo_bench.methods.rft import select_correct
from dapo_bench.training.policy_gradient import (
    ADVANTAGE_ESTIMATORS,
    LOSS_AGGREGATIONS,
    AdvantageInputs,
    aggregate,
    clipped_policy_loss,
    clipped_value_loss,
    compute_advantages,
    kl_k3,
    masked_whiten,
    outcome_token_rewards,
    shaped_rewards,
)

# Two rows; row 0 has a 1-token prompt then 3 response tokens; row 1 a 2-token prompt, 1 token.
MASK = torch.tensor([[0, 1, 1, 1], [0, 0, 1, 0]])


def test_aggregations_by_hand():
    loss = torch.tensor([[9.0, 1.0, 2.0, 3.0], [9.0, 9.0, 6.0, 9.0]])
    assert float(aggregate(loss, MASK, "token-mean")) == pytest.approx((1 + 2 + 3 + 6) / 4)
    assert float(aggregate(loss, MASK, "seq-mean-token-sum")) == pytest.approx((6 + 6) / 2)
    assert float(aggregate(loss, MASK, "seq-mean-token-mean")) == pytest.approx((2 + 6) / 2)
    assert "dapo" not in LOSS_AGGREGATIONS.names()
    with pytest.raises(UserError, match="unknown loss aggregation"):
        aggregate(loss, MASK, "dapo")


def test_outcome_rewards_sit_on_last_response_token():
    r = outcome_token_rewards([1.0, 0.5], MASK)
    assert r.tolist() == [[0, 0, 0, 1.0], [0, 0, 0.5, 0]]


def test_grpo_advantage_by_hand():
    mask = torch.ones(4, 2)
    rewards = torch.tensor([[0, 1.0], [0, 0.0], [0, 1.0], [0, 1.0]])
    inp = AdvantageInputs(rewards, mask, group=["a", "a", "b", "c"], eps=0.0)
    adv, ret = compute_advantages("grpo", inp)
    # group a: rewards (1, 0): mean 0.5, sample std sqrt(0.5) -> +-0.5/0.7071
    s = 0.5 / math.sqrt(0.5)
    assert adv[0].tolist() == pytest.approx([s, s])
    assert adv[1].tolist() == pytest.approx([-s, -s])
    # groups b and c hold one sample each: mean-centred to 0
    assert adv[2:].abs().max() == 0
    assert ret[:, 0].tolist() == [1, 0, 1, 1]
    adv_nostd, _ = compute_advantages("grpo", AdvantageInputs(
        rewards, mask, group=["a", "a", "b", "c"], norm_by_std=False))
    assert adv_nostd[0, 0] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="group"):
        compute_advantages("grpo", AdvantageInputs(rewards, mask))


def test_gae_by_hand_gamma1_lambda095():
    rewards = outcome_token_rewards([1.0, 0.0], MASK)
    values = torch.tensor([[7.0, 0.2, 0.4, 0.6], [7.0, 7.0, 0.3, 7.0]])
    adv, ret = compute_advantages("gae", AdvantageInputs(rewards, MASK, values=values,
                                                         gamma=1.0, lam=0.95))
    # row 0, tokens t=1..3 (values .2 .4 .6, reward 1 at t=3):
    d3 = 1.0 - 0.6
    d2 = 0.6 - 0.4
    d1 = 0.4 - 0.2
    a3 = d3
    a2 = d2 + 0.95 * a3
    a1 = d1 + 0.95 * a2
    assert adv[0].tolist() == pytest.approx([0, a1, a2, a3])
    assert ret[0].tolist() == pytest.approx([0, a1 + 0.2, a2 + 0.4, a3 + 0.6])
    # row 1: one token, reward 0, value .3 -> A = -0.3; masked prompt/padding stay 0
    assert adv[1].tolist() == pytest.approx([0, 0, -0.3, 0])
    # lambda = 1, gamma = 1: A_t = R - V_t (Monte Carlo)
    adv1, _ = compute_advantages("gae", AdvantageInputs(rewards, MASK, values=values, lam=1.0))
    assert adv1[0, 1:].tolist() == pytest.approx([0.8, 0.6, 0.4])
    assert set(ADVANTAGE_ESTIMATORS.names()) >= {"grpo", "gae"}


def test_clipped_policy_loss_by_hand():
    mask = torch.tensor([[1, 1, 0]])
    old = torch.zeros(1, 3)
    logp = torch.tensor([[math.log(1.5), math.log(0.5), 5.0]])  # ratios 1.5, 0.5, (masked)
    adv = torch.tensor([[1.0, 1.0, 100.0]])
    out = clipped_policy_loss(logp, old, adv, mask, clip_low=0.2, clip_high=0.2)
    # token 0: ratio 1.5 > 1.2 with A > 0 -> -1.2 ; token 1: ratio 0.5 < 0.8, A > 0 -> -0.5
    assert out.pg_loss == pytest.approx((-1.2 - 0.5) / 2)
    assert out.clip_frac == pytest.approx(0.5)
    # asymmetric clip (clip_high 0.6) lets token 0 keep ratio 1.5
    out2 = clipped_policy_loss(logp, old, adv, mask, clip_low=0.2, clip_high=0.6)
    assert out2.pg_loss == pytest.approx((-1.5 - 0.5) / 2)
    # gradient flows only through the unclipped token
    lp = logp.clone().requires_grad_(True)
    clipped_policy_loss(lp, old, adv, mask).loss.backward()
    assert lp.grad.tolist()[0] == pytest.approx([0.0, -0.5 / 2, 0.0])


def test_policy_loss_kl_term_by_hand():
    mask = torch.tensor([[1, 1]])
    logp = torch.tensor([[-1.0, -2.0]])
    ref = torch.tensor([[-1.5, -1.0]])
    out = clipped_policy_loss(logp, logp, torch.zeros(1, 2), mask, ref_logp=ref, kl_coef=0.1)
    d = torch.tensor([-0.5, 1.0])  # ref - logp
    k3 = (torch.exp(d) - d - 1).mean()
    assert out.kl == pytest.approx(float(k3))
    assert float(out.loss) == pytest.approx(0.1 * float(k3))
    assert float(kl_k3(logp, logp).abs().max()) == 0.0


def test_value_loss_and_shaping_by_hand():
    mask = torch.tensor([[1, 1]])
    v = torch.tensor([[1.0, 0.0]])
    old = torch.tensor([[0.5, 0.0]])
    ret = torch.tensor([[0.0, 1.0]])
    # token 0: unclipped (1-0)^2=1, clipped v=0.7 -> 0.49; max 1 -> 0.5 ; token 1: 0.5
    assert float(clipped_value_loss(v, old, ret, mask, clip=0.2)) == pytest.approx(0.5)
    r = shaped_rewards(torch.tensor([[0.0, 1.0]]), torch.tensor([[-1.0, -1.0]]),
                       torch.tensor([[-1.5, -0.5]]), mask, kl_coef=0.1)
    assert r.tolist()[0] == pytest.approx([-0.05, 1.05])


def test_masked_whiten():
    x = torch.tensor([[100.0, 1.0, 3.0]])
    w = masked_whiten(x, torch.tensor([[0, 1, 1]]))
    assert w.tolist()[0] == pytest.approx([0.0, -1.0, 1.0], abs=1e-4)


def test_dpo_loss_by_hand():
    pc, pr = torch.tensor([-1.0, -3.0]), torch.tensor([-2.0, -1.0])
    rc, rr = torch.tensor([-1.5, -2.0]), torch.tensor([-1.5, -2.0])
    out = dpo_loss(pc, pr, rc, rr, beta=0.5)
    h = [0.5 * ((-1 + 1.5) - (-2 + 1.5)), 0.5 * ((-3 + 2) - (-1 + 2))]  # 0.5, -1.0
    want = sum(-math.log(1 / (1 + math.exp(-x))) for x in h) / 2
    assert float(out.loss) == pytest.approx(want)
    assert out.accuracy == 0.5
    assert out.chosen_reward.tolist() == pytest.approx([0.25, -0.5])
    smooth = dpo_loss(pc, pr, rc, rr, beta=0.5, label_smoothing=0.1)
    want_s = sum(-0.9 * math.log(1 / (1 + math.exp(-x))) - 0.1 * math.log(1 / (1 + math.exp(x)))
                 for x in h) / 2
    assert float(smooth.loss) == pytest.approx(want_s)


def test_pairs_and_rft_selection():
    groups = [
        ("p1", ["a", "a", "x", "y"], [True, True, False, False]),
        ("p2", ["b", "c"], [True, True]),  # no wrong -> no pair
        ("p3", ["d", "e", "f"], [False, True, False]),
    ]
    pairs = build_pairs(groups, max_pairs_per_prompt=4, seed=0)
    by = {}
    for p in pairs:
        by.setdefault(p.prompt, []).append((p.chosen, p.rejected))
    assert sorted(by) == ["p1", "p3"]
    assert sorted(by["p1"]) == [("a", "x"), ("a", "y")]  # duplicate "a" counted once
    assert sorted(by["p3"]) == [("e", "d"), ("e", "f")]
    assert len(build_pairs(groups, max_pairs_per_prompt=1)) == 2
    assert select_correct(groups, max_per_prompt=1) == [("p1", "a"), ("p2", "b"), ("p3", "e")]
