"""The reference builder's plateau machinery: early stopping on dev, and the equal-compute
continuation check (SFT on the RL training problems' gold solutions at a FLOP target)."""

import torch

from dapo_bench.toy.build_ref import _stalled, continuation_check
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training import budget


def test_early_stop_when_dev_stalls():
    curve = [{"dev_acc": a} for a in (0.30, 0.50, 0.52, 0.503)]
    assert not _stalled(curve[:2], 2, 0.005)  # too few evals
    assert not _stalled(curve[:3], 2, 0.005)  # 0.52 beat 0.30 by far
    assert _stalled(curve, 2, 0.03)  # 0.52, 0.503 vs best-before 0.50: under +0.03
    assert not _stalled(curve, 2, 0.01)


def test_continuation_check_spends_its_flops_and_reports_paired_gains():
    torch.set_num_threads(1)
    tok = build_char_tokenizer()
    model = tiny_llama(tok, d=32, layers=1, heads=2, ffn=64)
    flops = 3e10  # ~60 steps of 64 gold solutions: one step is under 2% of it
    out = continuation_check(model, tok, flops, seed=0, n_eval=6)
    assert abs(out["flops"] / flops - 1) <= budget.TOLERANCE and out["steps"] > 1
    for split in ("test", "test_ood"):
        g = out[split]
        assert g["gain"] == g["after"] - g["before"] and g["stderr"] is not None
    assert out["in_paper_regime"] == (out["test"]["gain"] < 0.01)
