"""Supervised fine-tuning on (context ids, response ids) rows: the objective behind the ``sft``
method, RFT's update, the equal-compute control and ``toy.build_ref``.

Loss: mean next-token cross-entropy over response tokens only (``masked_lm_loss``). Rows are
token ids: a sampled response is trained on exactly as generated (RFT); a text one (a gold
solution) becomes ids through :func:`sft_rows` (the prompt by ``models.encode_prompt``, the
response on its own plus EOS, so the model learns to stop). Rows over ``max_length`` lose the
start of their context (counted in ``LoopStats.counts``). It runs the one training loop
(``training.loop``): seeded data order (``shuffled_batches(n, batch_size, seed + epoch)``), linear
warm-up then a constant or cosine learning rate, a FLOP budget stop through the ledger of
``scope`` (the stage's :class:`~dapo_bench.training.scope.Scope`), and on several ranks each rank's share of a batch weighted by its predicted tokens (so the update is
the whole batch's). The same pairs, config and initial weights give the same weights.

Not covered: packing of several pairs in one row, evaluation (callers do it in ``on_epoch``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from dapo_bench.errors import UserError
from dapo_bench.training.batches import (
    masked_lm_loss,
    pack_pairs,
    predicted_tokens,
    response_ids,
)
from dapo_bench.training.engine import ONE_PROCESS, EngineConfig, OptimConfig, make_engine
from dapo_bench.training.loop import LoopStats, LossOut, shuffled_batches, steps_for, train_loop
from dapo_bench.training.schedule import Schedule
from dapo_bench.training.scope import Scope


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


Row = tuple[Sequence[int], Sequence[int]]  # (context ids, response ids)


def sft_rows(tokenizer: Any, pairs: Sequence[tuple[Any, str]]) -> list[Row]:
    """(prompt, response text) pairs -> rows; a prompt may be text or its ids already."""
    from dapo_bench.models import encode_prompt

    return [(encode_prompt(tokenizer, p) if isinstance(p, str) else list(p),
             response_ids(tokenizer, r, eos=True)) for p, r in pairs]


def sft_loss(model: Any, tokenizer: Any, rows: Sequence[Row], max_length: int) -> LossOut:
    """The SFT loss of rows: a mean over their predicted tokens."""
    batch = pack_pairs([c for c, _ in rows], [r for _, r in rows],
                       pad_id=tokenizer.pad_token_id, max_length=max_length).to(model.device)
    return LossOut(masked_lm_loss(model, batch), predicted_tokens(batch), batch.n_tokens,
                   counts=batch.cuts)


def train_sft(
    model: Any,
    tokenizer: Any,
    pairs: Sequence[Row],
    cfg: SFTConfig = SFTConfig(),
    *,
    scope: Scope = Scope("sft"),
    engine_cfg: EngineConfig = ONE_PROCESS,
    engine: Any = None,
    on_log: Callable[[LoopStats], None] | None = None,
    on_epoch: Callable[[int, LoopStats], bool] | None = None,
) -> LoopStats:
    """Train ``model`` in place on ``pairs`` (rows of ids, :func:`sft_rows`); returns what was
    done (``counts``: rows whose context or response was cut to ``max_length``).

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
        total_steps=total, schedule=cfg.lr_schedule, scope=scope,
        log_every=cfg.log_every, on_log=on_log, on_epoch=on_epoch,
    )
    if not stats.stopped and cfg.max_steps is not None and stats.steps >= cfg.max_steps:
        stats.stopped = "max_steps"
    return stats
