"""A trainer's optimiser settings, :class:`OptimConfig`: a part of a method's config.

Apart from ``training.engine`` (which steps the optimiser, with torch) so that a method's
config imports no torch: ``dapo-bench train --help`` reads the method flags' fields
(``methods.base.method_flags``) without loading it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OptimConfig:
    """Optimiser settings of a trainer: lr (AdamW learning rate), weight_decay, betas,
    grad_clip (global gradient-norm clip)."""

    lr: float = 1e-5
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float = 1.0

    def __post_init__(self) -> None:
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.grad_clip <= 0:
            raise ValueError(f"grad_clip must be > 0, got {self.grad_clip}")
