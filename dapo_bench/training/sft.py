"""Supervised fine-tuning on (prompt, response) pairs: the objective behind the ``sft`` method,
RFT's update, the equal-compute control and ``toy.build_ref``.

Loss: mean next-token cross-entropy over response tokens only (``masked_lm_loss``); the
response gets an EOS appended so the model learns to stop. It runs the one training loop
(``training.loop``): seeded data order (``shuffled_batches(n, batch_size, seed + epoch)``), linear
warm-up then a constant or cosine learning rate, a FLOP budget stop through ``ledger``, and on
several ranks each rank's share of a batch weighted by its predicted tokens (so the update is
the whole batch's). The same pairs, config and initial weights give the same weights.

Not covered: packing of several pairs in one row, evaluation (callers do it in ``on_epoch``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from dapo_bench.errors import UserError
from dapo_bench.ledger import Ledger
from dapo_bench.training.batches import encode_pairs, masked_lm_loss, predicted_tokens
from dapo_bench.training.engine import ONE_PROCESS, EngineConfig, OptimConfig, make_engine
from dapo_bench.training.loop import (
    LoopStats,
    LossOut,
    Schedule,
    shuffled_batches,
    steps_for,
    train_loop,
)


@dataclass(frozen=True)
class SFTConfig:
    """SFT settings.

    epochs: passes over the pairs (a fraction runs part of the last pass); max_steps: stop
    earlier after this many optimizer steps; batch_size: pairs per step; warmup_steps: linear
    warm-up; schedule: "constant" or "cosine" (decays to ``min_lr_ratio * optim.lr`` at the end);
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

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.epochs <= 0:
            raise ValueError(f"epochs must be > 0, got {self.epochs}")
        if self.schedule not in ("constant", "cosine"):
            raise ValueError(f"schedule: expected constant|cosine, got {self.schedule!r}")

    @property
    def lr_schedule(self) -> Schedule:
        return Schedule(self.optim.lr, self.warmup_steps, self.schedule, self.min_lr_ratio)


def sft_loss(model: Any, tokenizer: Any, rows: Sequence[tuple[str, str]],
             max_length: int) -> LossOut:
    """The SFT loss of (prompt, response) rows: a mean over their predicted tokens."""
    batch = encode_pairs(tokenizer, [p for p, _ in rows], [r for _, r in rows],
                         max_length=max_length, add_eos=True).to(model.device)
    return LossOut(masked_lm_loss(model, batch), predicted_tokens(batch), batch.n_tokens)


def train_sft(
    model: Any,
    tokenizer: Any,
    pairs: Sequence[tuple[str, str]],
    cfg: SFTConfig = SFTConfig(),
    *,
    ledger: Ledger | None = None,
    stage: str = "sft",
    engine_cfg: EngineConfig = ONE_PROCESS,
    engine: Any = None,
    on_log: Callable[[LoopStats], None] | None = None,
    on_epoch: Callable[[int, LoopStats], bool] | None = None,
) -> LoopStats:
    """Train ``model`` in place on ``pairs``; returns what was done.

    ``on_epoch(epoch, stats)`` runs after each full pass; returning True stops training.
    ``engine_cfg`` names the training engine; pass ``engine`` instead to continue with an
    existing optimizer state.
    """
    if not pairs:
        raise UserError("sft: no training pairs")
    torch.manual_seed(cfg.seed)
    engine = engine or make_engine(model, cfg.optim, engine_cfg)
    total = steps_for(cfg.epochs, len(pairs), cfg.batch_size)
    if cfg.max_steps is not None:
        total = min(total, cfg.max_steps)
    stats = train_loop(
        engine,
        lambda epoch: [[pairs[i] for i in b] for b in
                       shuffled_batches(len(pairs), cfg.batch_size, cfg.seed + epoch)],
        lambda rows: sft_loss(engine.module, tokenizer, rows, cfg.max_length),
        total_steps=total, schedule=cfg.lr_schedule, ledger=ledger, stage=stage,
        log_every=cfg.log_every, on_log=on_log, on_epoch=on_epoch,
    )
    if not stats.stopped and cfg.max_steps is not None and stats.steps >= cfg.max_steps:
        stats.stopped = "max_steps"
    return stats
