"""A DeepSpeed stage resumes from its mid-stage checkpoint (DeepSpeed's own save_checkpoint of
the module and ZeRO-partitioned optimizer state): an SFT loop on a ZeRO-2 engine killed in step
4 and rerun from its step-2 checkpoint ends where an uninterrupted one ends."""

import pytest

pytest.importorskip(
    "deepspeed", reason="deepspeed not installed (pip install 'dapo-bench[deepspeed]')"
)

import torch

from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training import checkpoint, sft
from dapo_bench.training.engine import EngineConfig, OptimConfig

pytestmark = [pytest.mark.integration, pytest.mark.deepspeed]

TOK = build_char_tokenizer()
PAIRS = sft.sft_rows(TOK, [("12+3=", "15"), ("7*8=", "56"), ("40-9=", "31"), ("5+5=", "10"),
                           ("6*6=", "36"), ("9-4=", "5")])


def _train(ckpt_dir, kill_at=None, seed=0):
    model = tiny_llama(TOK, seed=seed, d=32, layers=2, heads=2, ffn=64)
    cfg = sft.SFTConfig(max_steps=6, epochs=3.0, batch_size=2, log_every=1,
                        optim=OptimConfig(lr=1e-2))
    real, calls = sft.sft_loss, []

    def loss(*a, **k):
        calls.append(1)
        if len(calls) == kill_at:
            raise KeyboardInterrupt
        return real(*a, **k)

    sft.sft_loss = loss
    try:
        with checkpoint.stage_scope(ckpt_dir, 2):
            stats = sft.train_sft(model, TOK, PAIRS, cfg, engine_cfg=EngineConfig("zero2"))
    finally:
        sft.sft_loss = real
    return model, stats, len(calls)


def test_zero2_sft_killed_mid_stage_resumes_from_its_checkpoint(tmp_path):
    want, s0, n0 = _train(tmp_path / "a")
    with pytest.raises(KeyboardInterrupt):
        _train(tmp_path / "b", kill_at=4)
    got, s1, n1 = _train(tmp_path / "b", seed=5)  # other init: the checkpoint replaces it
    assert (n0, n1) == (6, 4)  # steps 3-6 only
    assert [r["loss"] for r in s1.history] == pytest.approx([r["loss"] for r in s0.history],
                                                            rel=1e-5)
    for (name, a), b in zip(want.state_dict().items(), got.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6), name
