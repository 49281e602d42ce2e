"""The learning-rate schedule of the training loop (``train_loop(schedule=...)``):
:class:`Schedule`, a linear warm-up then a constant or cosine rate."""

from __future__ import annotations

import math
from dataclasses import dataclass

from dapo_bench.errors import UserError


@dataclass(frozen=True)
class Schedule:
    """Learning rate per optimizer step: linear warm-up over ``warmup_steps``, then ``kind``:
    "constant", or "cosine" (decays to ``min_lr_ratio * lr`` at the last step)."""

    lr: float
    warmup_steps: int = 0
    kind: str = "constant"
    min_lr_ratio: float = 0.1

    def __post_init__(self) -> None:
        if self.kind not in ("constant", "cosine"):
            raise UserError(f"schedule: expected constant|cosine, got {self.kind!r}")

    def at(self, step: int, total: int) -> float:
        """Learning rate of optimizer step ``step`` (0-based) of ``total``."""
        if step < self.warmup_steps:
            return self.lr * (step + 1) / self.warmup_steps
        if self.kind == "constant":
            return self.lr
        span = max(1, total - self.warmup_steps)
        frac = min(1.0, (step - self.warmup_steps) / span)
        cos = 0.5 * (1 + math.cos(math.pi * frac))
        return self.lr * (self.min_lr_ratio + (1 - self.min_lr_ratio) * cos)
