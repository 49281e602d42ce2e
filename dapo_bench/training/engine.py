"""Training engines: the one object every trainer steps (``engine.step(loss)``).

Two settings objects, one place each: ``OptimConfig`` (the optimiser: lr, weight decay,
betas, clipping; in ``training.optim``, which imports no torch, and imported from here as well)
belongs to a method's config; :class:`EngineConfig` (which engine: DeepSpeed stage, offload,
bf16, and ``micro_batch``, the items per forward/backward pass) belongs to the run
(``dapo-bench train --deepspeed``, ``--micro-batch``).
``make_engine(model, optim, engine)`` looks the engine up in ``ENGINES``: ``torch`` (plain
AdamW, one process) for ``deepspeed="none"``, ``deepspeed`` (ZeRO 0-3, registered by
``dapo_bench.training.deepspeed``) for ``zero0``..``zero3``. Trainers never touch an optimizer,
so a DeepSpeed engine plugs in without changing a method. On several ranks the torch engine is
plain data parallel: after ``backward`` it averages the gradients over the ranks (one
all-reduce of a flattened buffer), then clips and steps, so every rank takes the step one
process would take on the whole batch (the training loop weights each rank's loss by its share).
DeepSpeed adds ZeRO's memory savings (and CPU offload) on top of the same data parallelism.

Gradient accumulation (``micro_batch``, run by ``training.loop``): ``step(loss)`` is
``backward(loss)`` then ``update()``; the loop calls ``backward`` once per micro-batch (the
gradients add up) and ``update(scale)`` once: gradients times ``scale``, averaged over ranks,
clipped, one optimizer step, zeroed. The DeepSpeed engine has no ``update(scale)``: the scale
(1 / the step's total weight) is known only after the last micro-batch, when ZeRO has already
reduced the gradients, so ``micro_batch`` with ``--deepspeed`` is refused (:class:`EngineConfig`).

Not covered: mixed precision on CPU (float32 only; bf16 is a DeepSpeed/GPU option).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch

from dapo_bench.models import save_policy
from dapo_bench.registry import Registry
from dapo_bench.training.optim import OptimConfig

ZERO_STAGES = ("zero0", "zero1", "zero2", "zero3")


@dataclass(frozen=True)
class EngineConfig:
    """The run's training engine: deepspeed "none" (plain torch AdamW) or "zero0".."zero3"
    (needs the deepspeed extra); offload: ZeRO CPU offload of optimizer state (stage 1-3);
    bf16: DeepSpeed bf16 mixed precision (GPU); micro_batch: items per forward/backward pass
    (gradient accumulation in ``training.loop``; 0 or None = the whole batch at once): it
    changes memory, not the update (torch engine only)."""

    deepspeed: str = "none"
    offload: bool = False
    bf16: bool = False
    micro_batch: int = 0

    def __post_init__(self) -> None:
        if self.deepspeed not in ("none", *ZERO_STAGES):
            raise ValueError(f"deepspeed: expected none|{'|'.join(ZERO_STAGES)}, "
                             f"got {self.deepspeed!r}")
        mb = 0 if self.micro_batch is None else self.micro_batch
        if isinstance(mb, bool) or not isinstance(mb, int) or mb < 0:
            raise ValueError(f"micro-batch must be an integer >= 0 (0 = the whole batch), "
                             f"got {self.micro_batch!r}")
        object.__setattr__(self, "micro_batch", mb)
        if mb and self.deepspeed != "none":
            raise ValueError(f"micro-batch {mb} needs --deepspeed none (gradient accumulation "
                             f"is not implemented for the DeepSpeed engine)")

    @property
    def name(self) -> str:
        """The ``ENGINES`` entry this config asks for."""
        return "torch" if self.deepspeed == "none" else "deepspeed"


ONE_PROCESS = EngineConfig()  # the default engine: plain torch AdamW


class Engine:
    """Plain PyTorch AdamW engine: ``step(loss)`` = backward, clip, update, zero grads;
    ``backward`` and ``update`` are its two halves (gradient accumulation)."""

    def __init__(self, model: Any, cfg: OptimConfig, engine: EngineConfig = ONE_PROCESS):
        self.module = model
        self.cfg = cfg
        self.micro_batch = engine.micro_batch  # read by training.loop
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            params, lr=cfg.lr, betas=cast(tuple[float, float], tuple(cfg.betas)),
            weight_decay=cfg.weight_decay
        )
        model.train()

    @property
    def device(self) -> Any:
        return next(self.module.parameters()).device

    def step(self, loss: torch.Tensor) -> float:
        """One optimizer update on ``loss``; the pre-clip gradient norm."""
        self.backward(loss)
        return self.update()

    def backward(self, loss: torch.Tensor) -> None:
        """Add ``loss``'s gradients to those accumulated since the last update."""
        loss.backward()

    def update(self, scale: float = 1.0) -> float:
        """Step on the accumulated gradients times ``scale`` (averaged over ranks, clipped),
        then zero them; the pre-clip gradient norm."""
        if scale != 1.0:
            for p in self.module.parameters():
                if p.grad is not None:
                    p.grad.mul_(scale)
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

    @property
    def lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def save(self, tokenizer: Any, out_dir: str | os.PathLike) -> Path:
        return save_policy(self.module, tokenizer, out_dir)

    def save_state(self, path: Path) -> None:
        """Module and optimizer state for a mid-stage checkpoint (``training.checkpoint``);
        rank 0 writes it (every rank holds the same after a step)."""
        from dapo_bench import dist

        if dist.is_main():
            path.mkdir(parents=True, exist_ok=True)
            torch.save({"module": self.module.state_dict(),
                        "optimizer": self.optimizer.state_dict()}, path / "state.pt")

    def load_state(self, path: Path) -> None:
        state = torch.load(path / "state.pt", map_location=self.device, weights_only=True)
        self.module.load_state_dict(state["module"])
        self.optimizer.load_state_dict(state["optimizer"])


ENGINES: Registry[type] = Registry("training engine", modules=["dapo_bench.training.deepspeed"])
ENGINES.add("torch", Engine, help="plain PyTorch AdamW in one process")


def make_engine(model: Any, optim: OptimConfig, engine: EngineConfig = ONE_PROCESS) -> Any:
    """The registered engine ``engine`` names, optimising ``model`` with ``optim``."""
    return ENGINES.get(engine.name)(model, optim, engine)
