"""DAPO (Liu et al., step-level): steps, balancing, MC labels, advantages, actor loss, actor
training, and the config/preset plumbing. The end-to-end kill/resume run is in
test_dapo_resume.py."""

import pytest
import torch

from dapo_bench.errors import UserError
from dapo_bench.methods.dapo.actor import (
    ActorConfig,
    batches_by_state,
    dapo_actor_loss,
    reference_logprobs,
    train_actor,
)
from dapo_bench.methods.dapo.advantages import (
    VALUE_ESTIMATORS,
    Candidate,
    candidates_from_completions,
    state_advantages,
)
from dapo_bench.methods.dapo.rows import Action, AdvantageRow
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training.engine import OptimConfig
from dapo_bench.training.rollouts import (
    Rollout,
    StepSplitter,
    make_states,
    select_balanced,
    split_steps,
)

TOK = build_char_tokenizer()
EOS = TOK.eos_token_id
SPLIT = StepSplitter(TOK)


def ids(text: str) -> list[int]:
    return TOK(text, add_special_tokens=False)["input_ids"]


def comp(text: str, reward: float, finish: str = "stop") -> Rollout:
    """A completion as the rollout path keeps it (EOS in the ids when it stopped)."""
    tokens = ids(text) + ([EOS] if finish == "stop" else [])
    return Rollout(text, reward, None, len(tokens), finish, tokens)


def resp(text: str, reward: float) -> Rollout:
    return Rollout(text, reward, None, 0, "stop")


def state(prompt_ids: list[int], prefix_ids: list[int], actions: list[tuple]) -> AdvantageRow:
    """An ``advantages.jsonl`` row of (ids, eos, adv) actions (what the actor reads)."""
    return AdvantageRow("k", "p", "", tuple(prompt_ids), "", tuple(prefix_ids), tuple(
        Action(tuple(a), "", eos, 0.0, adv) for a, eos, adv in actions))


def cand(text: str, terminal: bool, reward=None, outcome=None) -> Candidate:
    return Candidate(tuple(ids(text) + ([EOS] if terminal else [])), text, terminal, reward,
                     outcome)


# ----------------------------------------------------------------------------- steps
def test_split_steps_keeps_newlines_and_roundtrips():
    r = "56*2=112\n112-93=19\n19+76=95\n\\boxed{95}"
    steps = split_steps(r)
    assert steps == ["56*2=112\n", "112-93=19\n", "19+76=95\n", "\\boxed{95}"]
    assert "".join(steps) == r
    assert split_steps("a\nb\n") == ["a\n", "b\n"]
    assert split_steps("a\n\nb") == ["a\n", "\n", "b"]  # an empty line is a step of its own
    assert split_steps("") == []


def test_make_states_are_prefixes_with_their_next_step():
    steps = SPLIT.split(ids("3+4=7\n\\boxed{7}") + [EOS])
    assert steps == [ids("3+4=7\n"), ids("\\boxed{7}") + [EOS]]
    states = make_states(steps)
    assert [s["prefix_ids"] for s in states] == [[], ids("3+4=7\n")]
    assert [s["action_ids"] for s in states] == steps
    assert [s["t"] for s in states] == [0, 1] and states[0]["n_steps"] == 2


def test_select_balanced_half_correct_half_wrong_and_fills_gaps():
    rs = [resp(f"r{i}", float(i < 5)) for i in range(10)]
    idx = select_balanced(rs, 6, seed=0)
    assert len(idx) == 6 and sum(rs[i].reward for i in idx) == 3
    only_right = [resp(f"r{i}", 1.0) for i in range(4)] + [resp("w", 0.0)]
    idx = select_balanced(only_right, 4)
    assert len(idx) == 4 and sum(only_right[i].reward for i in idx) == 3  # 1 wrong is all
    dup = [resp("same", 1.0)] * 5
    assert select_balanced(dup, 3) == [0]  # duplicated texts count once
    assert select_balanced(rs, 6, seed=1) == select_balanced(rs, 6, seed=1)
    # a reward read back without its verdict passes above PASS_THRESHOLD (0.5), only there
    half = [resp("a", 0.5), resp("b", 0.51)]
    assert [r.passed for r in half] == [False, True]


# ----------------------------------------------------------------------------- advantages
def test_candidates_first_steps_terminal_only_when_stopped():
    comps = [comp("12+3=15\n\\boxed{15}", 1.0), comp("\\boxed{15}", 1.0),
             comp("\\boxed{1", 0.0, "length"), comp("", 0.0),
             Rollout("", 0.0, None, 0, "length", [])]
    c = candidates_from_completions(comps, SPLIT)
    # stopping at once (only EOS generated) is an action too: the ids are what was sampled
    assert c == [cand("12+3=15\n", False), cand("\\boxed{15}", True, 1.0),
                 cand("\\boxed{1", False), cand("", True, 0.0)]
    assert c[1].ids[-1] == EOS and c[0].text == "12+3=15\n"


def test_advantages_and_filtering_on_a_hand_made_state():
    cands = [cand("12+3=15\n", False), cand("12+3=16\n", False),
             cand("\\boxed{15}", True, 1.0), cand("12+3=15\n", False)]
    values = [0.8, 0.2, None, 0.8]  # critic V(s + a_i); the terminal step uses its reward
    acts = state_advantages(cands, values, min_spread=0.1)
    # values 0.8, 0.2, 1.0, 0.8 -> mean 0.7 -> A = 0.1, -0.5, 0.3 (duplicate merged)
    assert [a.text for a in acts] == ["12+3=15\n", "12+3=16\n", "\\boxed{15}"]
    assert [a.adv for a in acts] == pytest.approx([0.1, -0.5, 0.3])
    assert [a.value for a in acts] == pytest.approx([0.8, 0.2, 1.0])
    assert [a.eos for a in acts] == [False, False, True]
    assert [list(a.ids) for a in acts] == [ids("12+3=15\n"), ids("12+3=16\n"),
                                           ids("\\boxed{15}") + [EOS]]
    # a state whose advantages spread less than the threshold is dropped
    flat = [cand("a\n", False), cand("b\n", False)]
    assert state_advantages(flat, [0.50, 0.58], min_spread=0.1) is None
    assert state_advantages(flat, [0.50, 0.58], min_spread=0.05) is not None
    # a single unique action carries no preference
    assert state_advantages([cand("a\n", False)] * 3, [0.1, 0.1, 0.1]) is None


# ----------------------------------------------------------------------------- actor loss
def test_value_estimators_on_a_hand_made_state():
    comps = [comp("12+3=15\n15*2=30\n\\boxed{30}", 1.0), comp("12+3=15\n15*2=31\n\\boxed{31}", 0.0),
             comp("12+3=16\n16*2=32\n\\boxed{32}", 0.0), comp("12+3=15\n15*2=30\n\\boxed{30}", 1.0)]
    cands = candidates_from_completions(comps, SPLIT)
    assert [c.outcome for c in cands] == [1.0, 0.0, 0.0, 1.0]
    critic = [0.5, 0.5, 0.4, 0.5]  # V(s + a_i) of the two distinct steps
    est = {e.name: e for e in VALUE_ESTIMATORS}
    assert est["critic"].obj(cands, critic, 0.0) == critic
    # "12+3=15\n" began 3 completions, 2 correct; "12+3=16\n" began 1, wrong
    assert est["mc"].obj(cands, critic, 0.0) == pytest.approx([2 / 3, 2 / 3, 0.0, 2 / 3])
    # shrunk towards the critic with weight 1: (2 + 0.5) / 4 and (0 + 0.4) / 2
    assert est["critic_mc"].obj(cands, critic, 1.0) == pytest.approx([0.625, 0.625, 0.2, 0.625])
    assert est["critic_mc"].obj(cands, critic, 0.0) == est["mc"].obj(cands, critic, 0.0)
    assert not est["mc"].meta["needs_critic"] and est["critic_mc"].meta["needs_critic"]
    # advantages from the MC values: mean 0.5 over the 4 samples -> +1/6 and -1/2
    acts = state_advantages(cands, est["mc"].obj(cands, critic, 0.0), min_spread=0.1)
    assert [a.adv for a in acts] == pytest.approx([1 / 6, -0.5])
    with pytest.raises(ValueError, match="no outcome"):
        est["mc"].obj([cand("a\n", False)], [0.1], 0.0)


def test_actor_loss_and_gradient_against_hand_computation():
    logp = torch.tensor([-1.0, -2.0, -0.5], requires_grad=True)
    ref = torch.tensor([-1.2, -1.5, -0.5])
    adv = torch.tensor([0.02, -0.01, 0.0])
    beta = 0.01
    loss, stats = dapo_actor_loss(logp, ref, adv, beta)
    # targets A/beta = 2, -1, 0; log-ratios = 0.2, -0.5, 0
    want = (0.5 * (2 - 0.2) ** 2 + 0.5 * (-1 + 0.5) ** 2 + 0.0) / 3
    assert loss.item() == pytest.approx(want)
    loss.backward()
    assert logp.grad.tolist() == pytest.approx([-(2 - 0.2) / 3, -(-1 + 0.5) / 3, 0.0])
    assert stats["sign_agree"] == pytest.approx(1.0)  # both non-zero A agree in sign
    assert stats["abs_log_ratio"] == pytest.approx((0.2 + 0.5 + 0) / 3)


def test_batches_keep_the_actions_of_one_state_together():
    groups = [[1, 2], [3], [4, 5, 6], [7, 8, 9, 10, 11], [12]]
    assert batches_by_state(groups, 4) == [[0, 1], [2], [3], [4]]
    assert sorted(i for b in batches_by_state(groups, 6) for i in b) == [0, 1, 2, 3, 4]


@pytest.fixture(scope="module")
def tiny_policy():
    tok = build_char_tokenizer()
    tok.padding_side = "left"
    return tiny_llama(tok, d=32, layers=2, heads=2, ffn=64, seed=3), tok


def test_train_actor_regresses_log_ratios_onto_a_over_beta(tiny_policy):
    model, tok = tiny_policy
    import copy

    model = copy.deepcopy(model)
    states = [
        state(ids("12+3\n"), [], [(ids("12+3=15\n"), False, 0.4),
                                  (ids("12+3=16\n"), False, -0.4)]),
        state(ids("40-7\n"), ids("40-7=33\n"), [(ids("\\boxed{33}") + [EOS], True, 0.5),
                                                (ids("\\boxed{31}") + [EOS], True, -0.5)]),
    ]
    pad = tok.pad_token_id
    ref = reference_logprobs(model, pad, states)
    st = train_actor(model, pad, states, ref, beta=1.0,
                     cfg=ActorConfig(optim=OptimConfig(lr=3e-3), epochs=40, batch_actions=4))
    hist = st.history
    assert len(hist) == 40 and hist[-1]["loss"] < 0.1 * hist[0]["loss"]
    after = reference_logprobs(model, pad, states)
    ratios = [a - r for s_a, s_r in zip(after, ref) for a, r in zip(s_a, s_r)]
    # the log-ratios approach their regression targets A / beta
    assert ratios == pytest.approx([0.4, -0.4, 0.5, -0.5], abs=0.15)
    assert hist[-1]["sign_agree"] == 1.0


# ----------------------------------------------------------------------------- config
def test_config_presets_and_overrides():
    from dapo_bench.methods import METHODS
    from dapo_bench.run import RunOptions, resolve_config

    spec = METHODS.get("dapo")
    preset, cfg = resolve_config(spec, RunOptions(), None, None, ["critic.optim.lr=1e-5"])
    assert preset == "toy" and cfg.critic.optim.lr == 1e-5 and cfg.mc_samples == 4
    assert cfg.actor.optim.lr == 2e-5
    assert cfg.advantage == "mc" and cfg.beta == 1.0 and cfg.n_problems == 2048
    _, paper = resolve_config(spec, RunOptions(model="x"), None, None, [])
    assert (paper.beta, paper.n_samples, paper.n_rollouts, paper.mc_samples) == (0.01, 32, 6, 16)
    assert paper.critic.optim.lr == 5e-6 and paper.min_spread == 0.1
    assert paper.actor.optim.lr == 1e-6 and not paper.critic.step_labels
    assert paper.advantage == "critic"
    with pytest.raises(UserError, match="beta"):
        resolve_config(spec, RunOptions(), None, None, ["beta=0"])
    with pytest.raises(UserError, match="unknown field"):
        resolve_config(spec, RunOptions(), None, None, ["critic.lr=1"])  # it is critic.optim.lr
    with pytest.raises(UserError, match="value estimator 'nope'.*critic_mc"):
        resolve_config(spec, RunOptions(), None, None, ["advantage=nope"])
    with pytest.raises(UserError, match="preset"):
        resolve_config(spec, RunOptions(), "nope", None, [])
    assert "Liu et al., step-level" in METHODS.entry("dapo").help


def test_list_shows_every_registry_with_the_advantage_estimators():
    from typer.testing import CliRunner

    from dapo_bench.cli import app

    out = CliRunner().invoke(app, ["list"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    for section in ("verifiers", "generator backends", "methods", "DAPO value estimators",
                    "policy-gradient advantage estimators", "training engines", "tasks",
                    "suites", "KL estimators", "gold transforms", "leaderboard formats"):
        assert section in out.stdout
    for name in ("critic_mc", "the paper's estimator", "dapo", "arith"):
        assert name in out.stdout


def test_method_specific_flags_belong_to_their_method():
    from dapo_bench.methods.base import flag_overrides

    assert flag_overrides("dapo", {"beta": 0.3, "iterations": None}) == ["beta=0.3"]
    with pytest.raises(UserError, match=r"--beta is not a dpo option \(methods that take it: "
                                        r"dapo\); use --set"):
        flag_overrides("dpo", {"beta": 0.3})
    with pytest.raises(UserError, match="--mc-samples is not a grpo option"):
        flag_overrides("grpo", {"mc_samples": 4})


def test_one_place_per_setting_in_the_dapo_config():
    from dapo_bench.methods.dapo import DapoConfig

    cfg = DapoConfig()
    for part in (cfg.actor, cfg.critic):
        assert not hasattr(part, "lr") and hasattr(part.optim, "lr")
        assert not hasattr(part.optim, "deepspeed")  # the engine is the run's (--deepspeed)
