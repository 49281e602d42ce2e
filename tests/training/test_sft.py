"""The SFT loop: learns, is seeded, counts tokens into the ledger and respects a budget."""

from __future__ import annotations

import pytest
import torch

from dapo_bench.arith import PROMPT_TEMPLATE, make_split
from dapo_bench.errors import UserError
from dapo_bench.ledger import Ledger
from dapo_bench.models import count_params
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training.batches import encode_pairs, masked_lm_loss
from dapo_bench.training.engine import OptimConfig
from dapo_bench.training.scope import Scope
from dapo_bench.training.sft import SFTConfig, sft_rows, train_sft

SMALL = {"d": 32, "layers": 1, "heads": 2, "ffn": 64}


@pytest.fixture(scope="module")
def tok():
    torch.set_num_threads(1)
    return build_char_tokenizer()


@pytest.fixture(scope="module")
def pairs():
    rows = make_split("sft", 48)
    return [(PROMPT_TEMPLATE.format(question=r["question"]), r["solution"]) for r in rows]


def eval_loss(model, tok, pairs) -> float:
    batch = encode_pairs(tok, [p for p, _ in pairs], [r for _, r in pairs], add_eos=True)
    with torch.no_grad():
        return float(masked_lm_loss(model, batch))


def test_loss_falls_and_tokens_are_counted(tok, pairs):
    model = tiny_llama(tok, seed=0, **SMALL)
    before = eval_loss(model, tok, pairs)
    ledger = Ledger(n_params=count_params(model))
    cfg = SFTConfig(epochs=3, batch_size=16, optim=OptimConfig(lr=1e-2), log_every=3)
    logs = []
    st = train_sft(model, tok, sft_rows(tok, pairs), cfg, scope=Scope("ref-sft", ledger), on_log=logs.append)
    assert st.steps == 9 and st.epochs == pytest.approx(3.0) and st.items == 144
    assert eval_loss(model, tok, pairs) < before - 1.0
    # Trained tokens: prompt + response + EOS of every pair, once per epoch, no padding.
    per_epoch = sum(len(tok(p + r)["input_ids"]) + 1 for p, r in pairs)
    assert st.tokens == 3 * per_epoch
    assert ledger.stages["ref-sft"].n_train == 3 * per_epoch and ledger.n_inf == 0
    assert [h["step"] for h in st.history] == [3, 6, 9] and len(logs) == 3
    assert not model.training


def test_seeded_runs_give_identical_weights(tok, pairs):
    cfg = SFTConfig(epochs=1, batch_size=16, seed=5, optim=OptimConfig(lr=1e-2))
    weights = []
    for _ in range(2):
        model = tiny_llama(tok, seed=0, **SMALL)
        train_sft(model, tok, sft_rows(tok, pairs), cfg)
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    assert torch.equal(weights[0], weights[1])
    model = tiny_llama(tok, seed=0, **SMALL)
    train_sft(model, tok, sft_rows(tok, pairs), SFTConfig(**{**cfg.__dict__, "seed": 6}))
    other = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert not torch.equal(weights[0], other)


def test_budget_and_callbacks_stop_training(tok, pairs):
    model = tiny_llama(tok, seed=0, **SMALL)
    n = count_params(model)
    one_batch = encode_pairs(
        tok, [p for p, _ in pairs[:16]], [r for _, r in pairs[:16]], add_eos=True
    )
    ledger = Ledger(n_params=n, budget_flops=6.0 * n * one_batch.n_tokens * 1.5)
    st = train_sft(model, tok, sft_rows(tok, pairs), SFTConfig(epochs=5, batch_size=16),
                   scope=Scope("sft", ledger))
    assert st.stopped == "budget" and st.steps == 2
    seen = []
    st = train_sft(
        model,
        tok,
        sft_rows(tok, pairs),
        SFTConfig(epochs=5, batch_size=16),
        on_epoch=lambda e, s: seen.append(e) or e == 2,
    )
    assert st.stopped == "callback" and seen == [1, 2] and st.steps == 6
    st = train_sft(model, tok, sft_rows(tok, pairs), SFTConfig(epochs=5, batch_size=16, max_steps=4))
    assert st.stopped == "max_steps" and st.steps == 4
    st = train_sft(model, tok, sft_rows(tok, pairs), SFTConfig(epochs=0.5, batch_size=16))
    assert st.steps == 2 and st.stopped == ""


def test_schedule_and_bad_config(tok, pairs):
    cfg = SFTConfig(warmup_steps=10, schedule="cosine", min_lr_ratio=0.1, optim=OptimConfig(lr=1.0))
    sched = cfg.lr_schedule
    assert sched.at(0, 100) == pytest.approx(0.1)
    assert sched.at(10, 100) == pytest.approx(1.0)
    assert sched.at(100, 100) == pytest.approx(0.1)
    assert 0.1 < sched.at(55, 100) < 1.0
    with pytest.raises(ValueError, match="schedule"):
        SFTConfig(schedule="linear")
    with pytest.raises(UserError, match="no training pairs"):
        train_sft(tiny_llama(tok, seed=0, **SMALL), tok, [], SFTConfig())


def test_long_rows_keep_their_response_and_are_counted(tok, pairs):
    """Over max_length a row loses the START of its prompt, never its response, and the loop
    counts it (nothing is truncated silently)."""
    from dapo_bench.training.batches import pack_pairs

    b = pack_pairs([[1, 2, 3, 4, 5], [1, 2]], [[7, 8, 9], [7]], pad_id=0, max_length=6)
    assert b.input_ids.tolist() == [[3, 4, 5, 7, 8, 9], [1, 2, 7, 0, 0, 0]]
    assert b.response_mask.tolist() == [[0, 0, 0, 1, 1, 1], [0, 0, 1, 0, 0, 0]]
    assert (b.context_cut, b.response_cut) == (1, 0)
    b = pack_pairs([[1, 2]], [[5, 6, 7, 8]], pad_id=0, max_length=3)
    assert b.input_ids.tolist() == [[2, 5, 6]] and (b.context_cut, b.response_cut) == (1, 1)
    model = tiny_llama(tok, seed=0, **SMALL)
    cfg = SFTConfig(epochs=1, batch_size=16, max_length=20, optim=OptimConfig(lr=1e-2))
    st = train_sft(model, tok, sft_rows(tok, pairs), cfg)
    assert st.counts["rows"] == 48 and st.counts["context_cut"] > 0
