"""DAPO's critic: soft-label BCE, calibration report, value model training and save/load."""

import math

import pytest
import torch

from dapo_bench.methods.dapo.critic import (
    CriticConfig,
    calibration,
    critic_examples,
    describe_skill,
    score_values,
    soft_bce,
    train_critic,
)
from dapo_bench.methods.dapo.rows import CriticExample, McRow
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training.engine import OptimConfig
from dapo_bench.training.value import ValueModel


def test_soft_bce_matches_hand_formula_and_gradient():
    z = torch.tensor([0.0, 2.0, -1.0], requires_grad=True)
    y = torch.tensor([0.25, 1.0, 0.5])
    loss = soft_bce(z, y)
    sig = [1 / (1 + math.exp(-v)) for v in (0.0, 2.0, -1.0)]
    want = -sum(t * math.log(s) + (1 - t) * math.log(1 - s) for s, t in zip(sig, y.tolist())) / 3
    assert loss.item() == pytest.approx(want, abs=1e-6)
    loss.backward()
    # d/dz of mean BCE = (sigmoid(z) - y) / N: MSE's gradient times 1 / (V (1 - V))
    assert z.grad.tolist() == pytest.approx([(s - t) / 3 for s, t in zip(sig, y.tolist())],
                                            abs=1e-6)


def test_calibration_brier_ece_and_bins_by_hand():
    preds = [0.05, 0.15, 0.12, 0.95, 1.0]
    labels = [0.0, 0.5, 0.0, 1.0, 0.75]
    cal = calibration(preds, labels, bins=10)
    brier = sum((p - y) ** 2 for p, y in zip(preds, labels)) / 5
    assert cal["brier"] == pytest.approx(brier)
    b1 = cal["bins"][1]  # [0.1, 0.2): 0.15 and 0.12
    assert b1["n"] == 2 and b1["mean_pred"] == pytest.approx(0.135)
    assert b1["mean_label"] == pytest.approx(0.25)
    assert cal["bins"][9]["n"] == 2  # 0.95 and exactly 1.0 fall in the last bin
    ece = (1 / 5) * 0.05 + (2 / 5) * abs(0.135 - 0.25) + (2 / 5) * abs(0.975 - 0.875)
    assert cal["ece"] == pytest.approx(ece)
    assert sum(b["n"] for b in cal["bins"]) == 5
    assert calibration([], [])["brier"] is None


def test_brier_skill_score_against_the_constant_predictor():
    labels = [0.0, 0.0, 1.0, 1.0]  # mean 0.5: the constant predictor's Brier is 0.25
    perfect = calibration(labels, labels)
    assert perfect["brier"] == 0 and perfect["brier_constant"] == pytest.approx(0.25)
    assert perfect["brier_skill"] == pytest.approx(1.0) and perfect["ece"] == 0
    const = calibration([0.5] * 4, labels)
    assert const["brier_skill"] == pytest.approx(0.0) and const["ece"] == pytest.approx(0.0)
    # predicting 0.25 / 0.75: Brier 0.0625, skill 1 - 0.0625 / 0.25 = 0.75; ECE 0.25
    half = calibration([0.25, 0.25, 0.75, 0.75], labels, bins=4)
    assert half["brier"] == pytest.approx(0.0625) and half["brier_skill"] == pytest.approx(0.75)
    assert half["ece"] == pytest.approx(0.25) and "4 equal-width bins" in half["binning"]
    wrong = calibration([1.0, 1.0, 0.0, 0.0], labels)  # worse than a constant
    assert wrong["brier_skill"] == pytest.approx(-3.0)
    assert calibration([0.3, 0.4], [1.0, 1.0])["brier_skill"] is None  # constant labels
    assert "skill +0.750" in describe_skill(half) and "4 equal-width bins" in describe_skill(half)


@pytest.fixture(scope="module")
def tiny_lm():
    tok = build_char_tokenizer()
    return tiny_llama(tok, d=32, layers=2, heads=2, ffn=64, seed=1), tok


def _ids(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


def test_value_model_learns_labels_and_roundtrips(tiny_lm, tmp_path):
    lm, tok = tiny_lm
    torch.manual_seed(0)
    vm = ValueModel.from_causal_lm(lm)
    # the head starts at zero: V = 0.5 everywhere
    data = [CriticExample(tuple(_ids(tok, p + s)), y, p, True) for p, s, y in [
        ("12+3\n", "12+3=15\n", 1.0), ("12+3\n", "12+3=16\n", 0.0),
        ("40-7\n", "40-7=33\n", 1.0), ("40-7\n", "40-7=31\n", 0.0)]] * 4
    pad = tok.pad_token_id
    before = score_values(vm, pad, [x.ids for x in data[:4]])
    assert before == pytest.approx([0.5] * 4)
    st = train_critic(vm, pad, data, CriticConfig(optim=OptimConfig(lr=3e-3), epochs=15,
                                                   batch_size=8))
    hist = st.history
    after = score_values(vm, pad, [x.ids for x in data[:4]])
    assert hist[-1]["loss"] < hist[0]["loss"] < math.log(2) + 1e-3
    assert after[0] > 0.7 and after[2] > 0.7 and after[1] < 0.3 and after[3] < 0.3
    assert st.counts == {"rows": 16 * 15, "context_cut": 0, "response_cut": 0}
    vm.save(tok, tmp_path / "critic")
    vm2, tok2 = ValueModel.load(tmp_path / "critic")
    again = score_values(vm2, tok2.pad_token_id, [x.ids for x in data[:4]])
    assert again == pytest.approx(after, abs=1e-5)


def test_value_reads_last_real_token_despite_padding(tiny_lm):
    lm, tok = tiny_lm
    vm = ValueModel.from_causal_lm(lm)
    torch.nn.init.normal_(vm.head.weight)
    short, long = _ids(tok, "1+1\n1+1=2\n"), _ids(tok, "1+1\n1+1=2\n\\boxed{2}")
    both = score_values(vm, tok.pad_token_id, [short, long], batch_size=2)
    alone = score_values(vm, tok.pad_token_id, [short], batch_size=1)
    assert both[0] == pytest.approx(alone[0], abs=1e-5)
    assert both[0] != pytest.approx(both[1], abs=1e-4)
    # a state over max_length keeps its END: the value is that of its last tokens
    cut = score_values(vm, tok.pad_token_id, [long], max_length=len(short))
    assert cut[0] == pytest.approx(score_values(vm, tok.pad_token_id,
                                                [long[-len(short):]])[0], abs=1e-5)


def test_critic_examples_add_one_sample_labels_of_s_plus_first_step(tiny_lm):
    from dapo_bench.training.rollouts import StepSplitter

    _, tok = tiny_lm
    eos = tok.eos_token_id

    def comp(text, reward, finish):  # a completion as mc.jsonl holds it
        ids = _ids(tok, text) + ([eos] if finish == "stop" else [])
        return {"text": text, "reward": reward, "n_tokens": len(ids), "finish_reason": finish,
                "token_ids": ids}

    prompt, prefix = _ids(tok, "4*3+5\n"), _ids(tok, "4*3=12\n")
    row = McRow.from_row({
        "key": "p1/k", "problem_id": "p1", "prefix": "4*3=12\n", "prefix_ids": prefix, "t": 1,
        "completions": [comp("12+5=17\n\\boxed{17}", 1.0, "stop"),
                        comp("12+5=18\n\\boxed{18}", 0.0, "stop"),
                        comp("\\boxed{17}", 1.0, "stop"),  # terminal
                        comp("12+5=17\n", 0.0, "length")],
        "value": 0.5, "prompt_tokens": 0})
    prompts = {"p1/k": prompt}
    split = StepSplitter(tok)
    plain = critic_examples([row], prompts, split)
    s = tuple(prompt + prefix)
    assert plain == [CriticExample(s, 0.5, "p1", True)]
    ex = critic_examples([row], prompts, split, step_labels=True)
    assert ex[0] == plain[0]
    # the terminal step is valued by its reward in stage B, so the critic never sees it
    assert ex[1:] == [CriticExample(s + tuple(_ids(tok, "12+5=17\n")), 1.0, "p1", False),
                      CriticExample(s + tuple(_ids(tok, "12+5=18\n")), 0.0, "p1", False),
                      CriticExample(s + tuple(_ids(tok, "12+5=17\n")), 0.0, "p1", False)]
