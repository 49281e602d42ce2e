"""Model I/O, (prompt, response) batches and summed log-probs shared by every trainer.

Every method trains through an :class:`Engine` (``make_engine``): ``torch`` (plain AdamW,
one process) here, ``deepspeed`` (ZeRO 0-3) registered by ``dapo_bench.training.deepspeed``.
Trainers call ``engine.step(loss)`` and never touch the optimizer directly, so a DeepSpeed
engine plugs in without changing a method.

Several ranks (``torchrun``/``deepspeed`` launcher) need the DeepSpeed engine; ``save_policy`` is
then a collective (see ``dapo_bench.training.dist``). Not covered here: data sharding (the
trainers shard, e.g. ``train_sft``) and mixed precision on CPU (float32 only; bf16 is a
DeepSpeed/GPU option).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from dapo_bench.errors import UserError
from dapo_bench.registry import Registry


def load_policy(path: str | os.PathLike, *, dtype: str = "float32", device: str = "cpu"):
    """Load (model, tokenizer) from a local directory or a hub id; padding on the left."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # our own progress bars and logs say what is loading
    p = Path(path)
    if (str(path).startswith((".", "/", "~")) or p.exists()) and not (p / "config.json").is_file():
        raise UserError(f"{path}: not a model directory (no config.json)")
    try:
        tok = AutoTokenizer.from_pretrained(str(path))
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=getattr(torch, dtype))
    except OSError as e:
        raise UserError(f"{path}: cannot load model ({str(e).splitlines()[0]})") from None
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return model.to(device), tok


def save_policy(model: Any, tokenizer: Any, out_dir: str | os.PathLike) -> Path:
    """Save atomically: write beside the target, then rename into place.

    With several ranks every rank must call it (a collective): ZeRO-3 parameters are gathered
    on all, rank 0 writes, and all leave after a barrier (so the others can then read ``out``).
    """
    from dapo_bench.training import dist

    out = Path(out_dir)
    if dist.world_size() == 1:
        return _write_policy(model, tokenizer, out)
    with dist.gathered(model):
        if dist.is_main():
            _write_policy(model, tokenizer, out)
    dist.barrier()
    return out


def _write_policy(model: Any, tokenizer: Any, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def count_params(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


@dataclass
class PairBatch:
    """Right-padded (prompt + response) ids; ``response_mask`` marks response tokens."""

    input_ids: torch.Tensor  # [B, L]
    attention_mask: torch.Tensor  # [B, L]
    response_mask: torch.Tensor  # [B, L], 1 where the token belongs to the response

    @property
    def n_tokens(self) -> int:
        """Tokens a forward pass processes (what the compute ledger counts)."""
        return int(self.attention_mask.sum())


def encode_pairs(
    tokenizer: Any,
    prompts: Sequence[str],
    responses: Sequence[str],
    *,
    max_length: int = 1024,
    add_eos: Sequence[bool] | bool = False,
) -> PairBatch:
    """Tokenise prompt and response separately (so the boundary is exact) and right-pad.

    ``add_eos`` appends the EOS token to a response (for complete responses in SFT/RL, not for
    a single intermediate step). Sequences longer than ``max_length`` keep their prompt's end
    and lose the response's tail.
    """
    if isinstance(add_eos, bool):
        add_eos = [add_eos] * len(prompts)
    rows, masks = [], []
    for prompt, resp, eos in zip(prompts, responses, add_eos):
        p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        r = tokenizer(resp, add_special_tokens=False)["input_ids"]
        if eos:
            r = r + [tokenizer.eos_token_id]
        ids = (p + r)[-max_length:] if len(p) >= max_length else (p + r)[:max_length]
        n_p = min(len(p), len(ids))
        rows.append(ids)
        masks.append([0] * n_p + [1] * (len(ids) - n_p))
    width = max(len(r) for r in rows)
    pad = tokenizer.pad_token_id
    input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    resp = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (ids, m) in enumerate(zip(rows, masks)):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        attn[i, : len(ids)] = 1
        resp[i, : len(m)] = torch.tensor(m)
    return PairBatch(input_ids, attn, resp)


def token_logprobs(model: Any, batch: PairBatch) -> torch.Tensor:
    """Log-prob of each token given its prefix, [B, L] (position 0 gets 0); masked by response."""
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    tok = torch.gather(logp, 2, batch.input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    out = torch.zeros_like(batch.input_ids, dtype=tok.dtype)
    out[:, 1:] = tok
    return out * batch.response_mask


def sequence_logprobs(model: Any, batch: PairBatch) -> torch.Tensor:
    """log pi(response | prompt): the SUM of the response's token log-probs, [B]."""
    return token_logprobs(model, batch).sum(dim=1)


def masked_lm_loss(model: Any, batch: PairBatch) -> torch.Tensor:
    """Mean next-token cross-entropy over response tokens (the SFT loss)."""
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    target = batch.input_ids[:, 1:].masked_fill(batch.response_mask[:, 1:] == 0, -100)
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)).float(), target.reshape(-1))


@dataclass(frozen=True)
class OptimConfig:
    """Optimiser settings shared by every trainer.

    deepspeed: "none" (plain torch AdamW) or "zero0".."zero3" (needs the deepspeed extra);
    offload: ZeRO CPU offload of optimizer state; bf16: DeepSpeed bf16 mixed precision.
    """

    lr: float = 1e-5
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float = 1.0
    deepspeed: str = "none"
    offload: bool = False
    bf16: bool = False


class Engine:
    """Plain PyTorch AdamW engine: ``step(loss)`` = backward, clip, update, zero grads."""

    def __init__(self, model: Any, cfg: OptimConfig):
        self.module = model
        self.cfg = cfg
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            params, lr=cfg.lr, betas=tuple(cfg.betas), weight_decay=cfg.weight_decay
        )
        model.train()

    def step(self, loss: torch.Tensor) -> float:
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(self.module.parameters(), self.cfg.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float(gn)

    def set_lr(self, lr: float) -> None:
        for g in self.optimizer.param_groups:
            g["lr"] = lr

    def save(self, tokenizer: Any, out_dir: str | os.PathLike) -> Path:
        return save_policy(self.module, tokenizer, out_dir)


ENGINES: Registry[type] = Registry("training engine", modules=["dapo_bench.training.deepspeed"])
ENGINES.add("torch", Engine, help="plain PyTorch AdamW in one process")


def make_engine(model: Any, cfg: OptimConfig) -> Engine:
    """The engine for ``cfg.deepspeed``: "none" -> torch, "zero0".."zero3" -> DeepSpeed."""
    if cfg.deepspeed in ("none", "", None):
        from dapo_bench.training.dist import check_engine

        check_engine(cfg.deepspeed)
        return Engine(model, cfg)
    if cfg.deepspeed not in ("zero0", "zero1", "zero2", "zero3"):
        raise UserError(f"deepspeed: expected none|zero0|zero1|zero2|zero3, got {cfg.deepspeed!r}")
    return ENGINES.get("deepspeed")(model, cfg)
