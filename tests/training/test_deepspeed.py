"""DeepSpeed ZeRO 0-3 (CPU accelerator, gloo) against the plain torch engine, for real.

Each stage trains the same tiny Llama on the same batches as the torch AdamW engine and must
end with the same losses, gradient norms and weights; stage 3 must save gathered full weights;
two processes under torchrun (data parallel, half the batch each) must match one process on the
whole batch. The first run builds DeepSpeed's shm comm op (~1 min, cached under
``$TORCH_EXTENSIONS_DIR``).
"""

import os
import subprocess
import sys

import pytest

pytest.importorskip(
    "deepspeed", reason="deepspeed not installed (pip install 'dapo-bench[deepspeed]')"
)

import torch

from dapo_bench.errors import UserError
from dapo_bench.models import load_policy, save_policy
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training.batches import encode_pairs, masked_lm_loss, sequence_logprobs
from dapo_bench.training.engine import EngineConfig, OptimConfig, make_engine

pytestmark = [pytest.mark.integration, pytest.mark.deepspeed]

PROMPTS = ["12+3=", "7*8=", "((5*2)-1)+3=", "40-9="]
ANSWERS = ["15\n", "56\n", "12\n", "31\n"]


def _train(stage, steps=4, offload=False, lr=1e-2):
    tok = build_char_tokenizer()
    model = tiny_llama(tok, seed=0, d=32, layers=2, heads=2, ffn=64)
    engine = make_engine(model, OptimConfig(lr=lr, grad_clip=0.5),
                         EngineConfig(stage, offload=offload))
    batch = encode_pairs(tok, PROMPTS, ANSWERS, add_eos=True)
    losses, norms = [], []
    for _ in range(steps):
        loss = masked_lm_loss(engine.module, batch)
        losses.append(float(loss))
        norms.append(engine.step(loss))
    return engine, tok, batch, losses, norms


@pytest.fixture(scope="module")
def reference():
    engine, _tok, _batch, losses, norms = _train("none")
    return {k: v.detach().clone() for k, v in engine.module.state_dict().items()}, losses, norms


@pytest.mark.parametrize("stage,offload", [("zero0", False), ("zero1", False), ("zero2", False),
                                           ("zero2", True), ("zero3", False), ("zero3", True)])
def test_stage_matches_torch_engine_and_saves_full_weights(stage, offload, reference, tmp_path):
    want_state, want_losses, want_norms = reference
    engine, tok, batch, losses, norms = _train(stage, offload=offload)
    assert engine.stage == int(stage[-1])
    assert losses == pytest.approx(want_losses, rel=1e-4)
    assert norms == pytest.approx(want_norms, rel=1e-3)
    assert max(want_norms) > 0.5  # clipping was active
    out = engine.save(tok, tmp_path / "m")
    model, _ = load_policy(out)
    for name, value in model.state_dict().items():
        assert torch.allclose(value, want_state[name], atol=1e-5), name
    with torch.no_grad():
        got = sequence_logprobs(model, batch)
        ref_model = tiny_llama(tok, seed=0, d=32, layers=2, heads=2, ffn=64)
        ref_model.load_state_dict(want_state)
        assert torch.allclose(got, sequence_logprobs(ref_model, batch), atol=1e-4)


def test_zero3_save_policy_on_the_module_writes_full_weights(reference, tmp_path):
    """Trainers that save with save_policy(model) (not engine.save) still get full weights."""
    want_state, _, _ = reference
    engine, tok, *_ = _train("zero3")
    model, _ = load_policy(save_policy(engine.module, tok, tmp_path / "m"))
    for name, value in model.state_dict().items():
        assert torch.allclose(value, want_state[name], atol=1e-5), name


def test_set_lr_zero_freezes_weights():
    engine, *_ = _train("zero2", steps=1)
    engine.set_lr(0.0)
    before = [p.detach().clone() for p in engine.module.parameters()]
    tok = build_char_tokenizer()
    batch = encode_pairs(tok, PROMPTS, ANSWERS, add_eos=True)
    engine.step(masked_lm_loss(engine.module, batch))
    assert all(torch.equal(a, b) for a, b in zip(before, engine.module.parameters()))


def test_zero0_clips_itself_as_deepspeed_does_without_meeting_the_other_ranks():
    """fp32 ZeRO-0: the engine turns DeepSpeed's clip off (it all-reduces a norm every rank
    already has) and clips the same way itself: bit-equal to DeepSpeed's own clip_grad_norm_."""
    from deepspeed.runtime.utils import clip_grad_norm_

    from dapo_bench.training.deepspeed import clip_as_deepspeed

    engine, *_ = _train("zero0", steps=1)  # the one-process group DeepSpeed's clip reads
    assert engine.clip == 0.5 and engine.config["gradient_clipping"] == 0.0
    gen = torch.Generator().manual_seed(0)
    for scale in (10.0, 1e-3):  # clipped, and left alone (coefficient 1)
        params = [torch.nn.Parameter(torch.zeros(n)) for n in (7, 33, 128)]
        for q in params:
            q.grad = torch.randn(q.shape, generator=gen) * scale
        ours = [q.grad.clone() for q in params]
        clip_as_deepspeed(ours, 0.5)
        clip_grad_norm_(params, 0.5)
        assert all(torch.equal(a, q.grad) for a, q in zip(ours, params))


def test_bf16_on_cpu_is_a_user_error():
    tok = build_char_tokenizer()
    model = tiny_llama(tok, seed=0, d=32, layers=2, heads=2, ffn=64)
    with pytest.raises(UserError, match="bf16 is a GPU option"):
        make_engine(model, OptimConfig(), EngineConfig("zero2", bf16=True))


WORKER = """
import sys, torch
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training.batches import encode_pairs, masked_lm_loss
from dapo_bench.training.engine import EngineConfig, OptimConfig, make_engine
torch.set_num_threads(1)
prompts, answers, stage, out = {prompts!r}, {answers!r}, sys.argv[1], sys.argv[2]
tok = build_char_tokenizer()
model = tiny_llama(tok, seed=0, d=32, layers=2, heads=2, ffn=64)
engine = make_engine(model, OptimConfig(lr=1e-2, grad_clip=0.5), EngineConfig(stage))
half = slice(engine.rank * 2, engine.rank * 2 + 2)  # this rank's half of the batch
batch = encode_pairs(tok, prompts[half], answers[half], add_eos=True)
for _ in range(4):
    engine.step(masked_lm_loss(engine.module, batch))
engine.save(tok, out)
"""


@pytest.mark.parametrize("stage", ["zero2", "zero3"])
def test_two_processes_under_torchrun_match_one_on_the_whole_batch(stage, tmp_path):
    # both halves have the same number of response tokens, so the mean of the two
    # half-batch losses is the whole-batch loss, and averaged gradients are the same
    tok = build_char_tokenizer()
    one = encode_pairs(tok, PROMPTS[:2], ANSWERS[:2], add_eos=True).response_mask.sum()
    assert one == encode_pairs(tok, PROMPTS[2:], ANSWERS[2:], add_eos=True).response_mask.sum()
    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(prompts=PROMPTS, answers=ANSWERS))
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env["OMP_NUM_THREADS"] = "1"
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         str(script), stage, str(tmp_path / "m")],
        check=False, env=env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    got, _ = load_policy(tmp_path / "m")
    whole, *_ = _train("none")
    for name, value in whole.module.state_dict().items():
        assert torch.allclose(got.state_dict()[name], value, atol=1e-5), name
