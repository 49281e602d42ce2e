"""Training engines: the one object every trainer steps (``engine.step(loss)``).

Two settings objects, one place each: :class:`OptimConfig` (the optimiser: lr, weight decay,
betas, clipping) belongs to a method's config; :class:`EngineConfig` (which engine: DeepSpeed
stage, offload, bf16) belongs to the run (``dapo-bench train --deepspeed``).
``make_engine(model, optim, engine)`` looks the engine up in ``ENGINES``: ``torch`` (plain
AdamW, one process) for ``deepspeed="none"``, ``deepspeed`` (ZeRO 0-3, registered by
``dapo_bench.training.deepspeed``) for ``zero0``..``zero3``. Trainers never touch an optimizer,
so a DeepSpeed engine plugs in without changing a method. On several ranks the torch engine is
plain data parallel: after ``backward`` it averages the gradients over the ranks (one
all-reduce of a flattened buffer), then clips and steps, so every rank takes the step one
process would take on the whole batch (the training loop weights each rank's loss by its share).
DeepSpeed adds ZeRO's memory savings (and CPU offload) on top of the same data parallelism.

Not covered: mixed precision on CPU (float32 only; bf16 is a DeepSpeed/GPU option), gradient
accumulation (one ``step`` is one optimizer update).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from dapo_bench.models import save_policy
from dapo_bench.registry import Registry

ZERO_STAGES = ("zero0", "zero1", "zero2", "zero3")


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


@dataclass(frozen=True)
class EngineConfig:
    """The run's training engine: deepspeed "none" (plain torch AdamW) or "zero0".."zero3"
    (needs the deepspeed extra); offload: ZeRO CPU offload of optimizer state (stage 1-3);
    bf16: DeepSpeed bf16 mixed precision (GPU)."""

    deepspeed: str = "none"
    offload: bool = False
    bf16: bool = False

    def __post_init__(self) -> None:
        if self.deepspeed not in ("none", *ZERO_STAGES):
            raise ValueError(f"deepspeed: expected none|{'|'.join(ZERO_STAGES)}, "
                             f"got {self.deepspeed!r}")

    @property
    def name(self) -> str:
        """The ``ENGINES`` entry this config asks for."""
        return "torch" if self.deepspeed == "none" else "deepspeed"


ONE_PROCESS = EngineConfig()  # the default engine: plain torch AdamW


class Engine:
    """Plain PyTorch AdamW engine: ``step(loss)`` = backward, clip, update, zero grads."""

    def __init__(self, model: Any, cfg: OptimConfig, engine: EngineConfig = ONE_PROCESS):
        self.module = model
        self.cfg = cfg
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            params, lr=cfg.lr, betas=tuple(cfg.betas), weight_decay=cfg.weight_decay
        )
        model.train()

    @property
    def device(self) -> Any:
        return next(self.module.parameters()).device

    def step(self, loss: torch.Tensor) -> float:
        loss.backward()
        self._average_gradients()
        gn = torch.nn.utils.clip_grad_norm_(self.module.parameters(), self.cfg.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float(gn)

    def _average_gradients(self) -> None:
        """Several ranks: every gradient becomes the mean over ranks (one flattened buffer)."""
        from dapo_bench import dist

        world = dist.world_size()
        if world == 1:
            return
        import torch.distributed as tdist

        params = [p for p in self.module.parameters() if p.requires_grad]
        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        dist.ensure_group()
        tdist.all_reduce(flat)
        flat /= world
        k = 0
        for p in params:
            n = p.numel()
            p.grad.copy_(flat[k : k + n].view_as(p.grad))
            k += n

    def set_lr(self, lr: float) -> None:
        for g in self.optimizer.param_groups:
            g["lr"] = lr

    def save(self, tokenizer: Any, out_dir: str | os.PathLike) -> Path:
        return save_policy(self.module, tokenizer, out_dir)


ENGINES: Registry[type] = Registry("training engine", modules=["dapo_bench.training.deepspeed"])
ENGINES.add("torch", Engine, help="plain PyTorch AdamW in one process")


def make_engine(model: Any, optim: OptimConfig, engine: EngineConfig = ONE_PROCESS) -> Any:
    """The registered engine ``engine`` names, optimising ``model`` with ``optim``."""
    return ENGINES.get(engine.name)(model, optim, engine)
