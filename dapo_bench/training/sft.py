"""Supervised fine-tuning on (prompt, response) pairs: the loop behind ``build_ref`` and the
``sft`` method.

Loss: mean next-token cross-entropy over response tokens only (``masked_lm_loss``); the
response gets an EOS appended so the model learns to stop. Optimisation goes through an
``Engine`` (plain AdamW with gradient clipping, or DeepSpeed), with linear warm-up and then a
constant or cosine learning rate. Seeded: the same pairs, config and initial weights give the
same weights (data order comes from ``random.Random(seed + epoch)``).

Every step adds the tokens its forward pass processes (prompt + response, no padding) to
``ledger`` under the caller's stage name; with a FLOP budget the loop stops as soon as
``ledger.exhausted()``. Several ranks (DeepSpeed): ``batch_size`` is the global batch; each
rank steps on its contiguous share (``dist.shard``) with its loss weighted by its share of the
predicted tokens, so the averaged gradient is the whole batch's; losses and token counts are
summed over ranks, so every rank sees the same ledger and stops at the same step.
Not covered: gradient accumulation, packing of several pairs in one row, evaluation (callers
do it in ``on_epoch``).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from dapo_bench.errors import UserError
from dapo_bench.ledger import Ledger
from dapo_bench.training.common import (
    OptimConfig,
    PairBatch,
    encode_pairs,
    make_engine,
    masked_lm_loss,
)


@dataclass(frozen=True)
class SFTConfig:
    """SFT settings.

    epochs: passes over the pairs (a fraction runs part of the last pass); max_steps: stop
    earlier after this many optimizer steps; batch_size: pairs per step; warmup_steps: linear
    warm-up; schedule: "constant" or "cosine" (decays to ``min_lr_ratio * lr`` at the end);
    log_every: steps between ``on_log`` calls; seed: data order and torch RNG.
    """

    epochs: float = 1.0
    max_steps: int | None = None
    batch_size: int = 64
    warmup_steps: int = 0
    schedule: str = "constant"
    min_lr_ratio: float = 0.1
    max_length: int = 1024
    log_every: int = 20
    seed: int = 0
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=2e-3))


@dataclass
class SFTStats:
    steps: int = 0
    epochs: float = 0.0
    pairs: int = 0
    tokens: int = 0
    loss: float = float("nan")  # mean loss of the last ``log_every`` steps
    seconds: float = 0.0
    stopped: str = ""  # "" | "budget" | "callback" | "max_steps"
    n_pairs: int = 0
    last_tokens: int = 0
    history: list[dict] = field(default_factory=list)


def lr_at(cfg: SFTConfig, step: int, total: int) -> float:
    """Learning rate for optimizer step ``step`` (0-based) of ``total``."""
    base = cfg.optim.lr
    if step < cfg.warmup_steps:
        return base * (step + 1) / cfg.warmup_steps
    if cfg.schedule == "constant":
        return base
    if cfg.schedule != "cosine":
        raise UserError(f"sft.schedule: expected constant|cosine, got {cfg.schedule!r}")
    span = max(1, total - cfg.warmup_steps)
    frac = min(1.0, (step - cfg.warmup_steps) / span)
    return base * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * frac)))


def train_sft(
    model: Any,
    tokenizer: Any,
    pairs: Sequence[tuple[str, str]],
    cfg: SFTConfig = SFTConfig(),
    *,
    ledger: Ledger | None = None,
    stage: str = "sft",
    engine: Any = None,
    on_log: Callable[[SFTStats], None] | None = None,
    on_epoch: Callable[[int, SFTStats], bool] | None = None,
) -> SFTStats:
    """Train ``model`` in place on ``pairs``; returns what was done.

    ``on_epoch(epoch, stats)`` runs after each full pass; returning True stops training.
    Pass ``engine`` to continue with an existing optimizer state.
    """
    if not pairs:
        raise UserError("sft: no training pairs")
    if cfg.batch_size < 1:
        raise UserError(f"sft.batch_size must be >= 1, got {cfg.batch_size}")
    torch.manual_seed(cfg.seed)
    engine = engine or make_engine(model, cfg.optim)
    model.train()
    per_epoch = math.ceil(len(pairs) / cfg.batch_size)
    total = math.ceil(cfg.epochs * per_epoch)
    if cfg.max_steps is not None:
        total = min(total, cfg.max_steps)
    stats = SFTStats(n_pairs=len(pairs))
    t0 = time.perf_counter()
    losses: list[float] = []
    epoch = 0
    while stats.steps < total and not stats.stopped:
        order = list(range(len(pairs)))
        random.Random(cfg.seed + epoch).shuffle(order)
        for start in range(0, len(order), cfg.batch_size):
            if stats.steps >= total:
                break
            if ledger is not None and ledger.exhausted():
                stats.stopped = "budget"
                break
            idx = order[start : start + cfg.batch_size]
            _step(model, tokenizer, engine, cfg, [pairs[i] for i in idx], total, stats, losses)
            if ledger is not None:
                ledger.add_train(stage, stats.last_tokens)
            if stats.steps % cfg.log_every == 0 or stats.steps == total:
                stats.loss = sum(losses) / len(losses)
                stats.seconds = time.perf_counter() - t0
                stats.history.append(
                    {"step": stats.steps, "epochs": round(stats.epochs, 3), "loss": stats.loss}
                )
                losses.clear()
                if on_log is not None:
                    on_log(stats)
        else:
            epoch += 1
            stats.seconds = time.perf_counter() - t0
            if on_epoch is not None and on_epoch(epoch, stats):
                stats.stopped = "callback"
            model.train()
    if not stats.stopped and cfg.max_steps is not None and stats.steps >= cfg.max_steps:
        stats.stopped = "max_steps"
    if losses:
        stats.loss = sum(losses) / len(losses)
    stats.seconds = time.perf_counter() - t0
    model.eval()
    return stats


def _step(model, tokenizer, engine, cfg: SFTConfig, chunk, total: int, stats: SFTStats, losses):
    from dapo_bench.training import dist

    world = dist.world_size()
    mine = dist.shard(chunk) if world > 1 else list(chunk)
    rows = mine or list(chunk[:1])  # a rank without rows steps on one with weight 0
    batch = encode_pairs(
        tokenizer,
        [p for p, _ in rows],
        [r for _, r in rows],
        max_length=cfg.max_length,
        add_eos=True,
    )
    if model.device.type != "cpu":
        batch = PairBatch(
            *(
                t.to(model.device)
                for t in (batch.input_ids, batch.attention_mask, batch.response_mask)
            )
        )
    engine.set_lr(lr_at(cfg, stats.steps, total))
    loss = masked_lm_loss(model, batch)
    if world > 1:
        # DeepSpeed averages gradients over ranks: weight each rank's token-mean loss by its
        # share of the predicted tokens, so the update is the one of the whole chunk
        n_pred = float(batch.response_mask[:, 1:].sum()) if mine else 0.0
        n_all, n_tokens, loss_sum = dist.all_sum(
            [n_pred, batch.n_tokens if mine else 0, float(loss.detach()) * n_pred])
        engine.step(loss * (world * n_pred / max(n_all, 1.0)))
        losses.append(loss_sum / max(n_all, 1.0))
        n_tokens = int(n_tokens)
    else:
        engine.step(loss)
        losses.append(float(loss.detach()))
        n_tokens = batch.n_tokens
    stats.steps += 1
    stats.pairs += len(chunk)
    stats.last_tokens = n_tokens
    stats.tokens += n_tokens
    stats.epochs = stats.pairs / stats.n_pairs
