"""The ``deepspeed`` training engine: ZeRO stages 0-3 through ``deepspeed.initialize``.

``make_engine(model, optim, EngineConfig(deepspeed="zero2"))`` returns a :class:`DeepSpeedEngine`
with the same interface as the plain torch engine (``.module``, ``.step(loss) -> grad norm``,
``.set_lr``, ``.save``), so every trainer runs on it unchanged. The DeepSpeed config is
generated from the optimiser's :class:`~dapo_bench.training.engine.OptimConfig` and the
run's :class:`~dapo_bench.training.engine.EngineConfig` by :func:`ds_config`:

- ``zero_optimization.stage`` 0-3; ``offload`` moves optimizer state to CPU (and, at stage 3,
  the parameters too); ``bf16`` turns on DeepSpeed bf16 mixed precision (fp32 master weights);
- AdamW with the config's lr, betas and weight decay, ``gradient_clipping = grad_clip``;
  micro-batch 1 and no gradient accumulation: one ``step(loss)`` is one optimizer update
  (``EngineConfig`` refuses ``micro_batch`` with DeepSpeed: the loop's accumulation scales the
  summed gradients by 1 / the batch's weight after the last micro-batch, and ZeRO has reduced
  and partitioned them by then);
- on DeepSpeed's CPU accelerator (no GPU), ``torch_adam: true`` (torch's AdamW instead of
  DeepSpeed's fused/CPU Adam, whose C++ builds take minutes) and the gloo backend;
- ``$DAPO_BENCH_DS_CONFIG`` may name a JSON file whose keys are merged over the generated
  config (nested dicts merge key by key), for settings this module does not expose.

Process group: under the ``deepspeed`` launcher or ``torchrun`` the launcher's RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT are used as they are; in a plain
``python``/``dapo-bench`` process they default to a one-process group on 127.0.0.1 and a free
port. Saving writes only on rank 0 (after a barrier); at stage 3 the partitioned weights are
gathered first, so the saved directory is a complete ``save_pretrained`` model.

Several ranks: gradients are averaged across ranks; each rank steps on its share of every
global batch (``training.loop`` shards and weights it). Not covered: pipeline/tensor
parallelism, fp16 loss scaling, DeepSpeed checkpoints of optimizer state (``save`` writes the
model weights only). On a GPU, trainers that pass CPU batches still work (:func:`follow_inputs`
moves inputs in and outputs back, a copy of the logits per call); device-aware trainers put
batches on ``engine.device``.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import socket
from pathlib import Path
from typing import Any

from dapo_bench.dist import TIMEOUT, gathered, leave_group_at_exit
from dapo_bench.errors import UserError
from dapo_bench.models import save_policy
from dapo_bench.training.engine import ENGINES, EngineConfig, OptimConfig

EXTRA_HINT = "pip install 'dapo-bench[deepspeed]'"
_STAGES = {"zero0": 0, "zero1": 1, "zero2": 2, "zero3": 3}


def import_deepspeed():
    """``import deepspeed``, or a UserError that names the extra to install."""
    try:
        import deepspeed
    except ImportError as e:
        raise UserError(
            f"--deepspeed needs the deepspeed extra: {EXTRA_HINT} ({e.__class__.__name__}: {e})"
        ) from None
    return deepspeed


def zero_stage(name: str) -> int:
    try:
        return _STAGES[name]
    except KeyError:
        raise UserError(f"deepspeed: expected zero0|zero1|zero2|zero3, got {name!r}") from None


def ds_config(cfg: OptimConfig, engine: EngineConfig, *, on_cpu: bool) -> dict[str, Any]:
    """The DeepSpeed config (a plain dict, as ``deepspeed.initialize(config=...)`` takes)."""
    stage = zero_stage(engine.deepspeed)
    zero: dict[str, Any] = {"stage": stage}
    if engine.offload:
        if stage == 0:
            raise UserError("deepspeed: offload needs ZeRO stage 1-3 (got zero0)")
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": not on_cpu}
        if stage == 3:
            zero["offload_param"] = {"device": "cpu", "pin_memory": not on_cpu}
    if stage == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = True
    params: dict[str, Any] = {
        "lr": cfg.lr,
        "betas": list(cfg.betas),
        "weight_decay": cfg.weight_decay,
    }
    if on_cpu:
        params["torch_adam"] = True
    config: dict[str, Any] = {
        "train_micro_batch_size_per_gpu": 1,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": cfg.grad_clip,
        "optimizer": {"type": "AdamW", "params": params},
        "bf16": {"enabled": bool(engine.bf16)},
        "zero_optimization": zero,
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }
    if on_cpu and engine.offload:
        config["zero_force_ds_cpu_optimizer"] = False
    override = os.environ.get("DAPO_BENCH_DS_CONFIG")
    if override:
        config = _merge(config, _read_override(override))
    return config


def _read_override(path: str) -> dict[str, Any]:
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise UserError(f"{path}: DeepSpeed config not found (DAPO_BENCH_DS_CONFIG)") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: a DeepSpeed config must be a JSON object")
    return data


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_process_group(deepspeed: Any, on_cpu: bool) -> None:
    """Join the launcher's process group, or make a one-process one (gloo on CPU).

    The timeout is ``dist.TIMEOUT`` (12 h, ``$DAPO_BENCH_DIST_TIMEOUT_H``): under ``dapo-bench
    train`` the other ranks wait at a barrier while rank 0 generates and evaluates.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return
    if "RANK" not in os.environ:
        os.environ.setdefault("WORLD_SIZE", "1")
        os.environ.setdefault("LOCAL_RANK", "0")
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(_free_port()))
        os.environ["RANK"] = "0"
    if not on_cpu:  # one GPU per rank before the first collective (NCCL barriers need it)
        from deepspeed.accelerator import get_accelerator

        get_accelerator().set_device(int(os.environ.get("LOCAL_RANK", "0")))
    deepspeed.init_distributed(dist_backend="gloo" if on_cpu else None, verbose=False,
                               timeout=TIMEOUT)
    leave_group_at_exit()


def _move(obj: Any, device: Any) -> Any:
    """Tensors in ``obj`` (a tensor, tuple/list, dict or transformers ModelOutput) to ``device``."""
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):  # ModelOutput is an OrderedDict: item assignment keeps attributes
        for k in list(obj.keys()):
            obj[k] = _move(obj[k], device)
        return obj
    if isinstance(obj, (tuple, list)):
        return type(obj)(_move(x, device) for x in obj)
    return obj


def follow_inputs(module: Any, device: Any) -> None:
    """Let device-unaware trainers call a GPU module with CPU tensors.

    Inputs go to ``device``; outputs come back to the device of the first input tensor (no
    copy when the trainer already passes ``device`` tensors, so device-aware code pays nothing).
    """
    import torch

    state: dict[str, Any] = {}

    def pre(_mod: Any, args: tuple, kwargs: dict):
        first = next((t for t in (*args, *kwargs.values()) if isinstance(t, torch.Tensor)), None)
        state["src"] = None if first is None else first.device
        return _move(args, device), _move(kwargs, device)

    def post(_mod: Any, _args: tuple, _kwargs: dict, output: Any):
        src = state.get("src")
        return output if src is None or src == output_device(output) else _move(output, src)

    def output_device(output: Any) -> Any:
        t = getattr(output, "logits", output)
        return t.device if isinstance(t, torch.Tensor) else None

    module.register_forward_pre_hook(pre, with_kwargs=True)
    module.register_forward_hook(post, with_kwargs=True)


def gather_on_save(module: Any) -> None:
    """ZeRO-3: make ``save_pretrained`` of the module and its transformers submodules gather
    the partitioned weights first, so trainers that save with ``save_policy(model, ...)``
    instead of ``engine.save`` still write full weights. Other ``state_dict()`` callers
    (e.g. a bare ``torch.save(head.state_dict())``) are not covered: use ``engine.save``.
    """
    for sub in module.modules():
        original = getattr(sub, "save_pretrained", None)
        if original is None:
            continue

        def save_pretrained(*args: Any, _orig: Any = original, _sub: Any = sub, **kw: Any):
            # parameters an outer gather (save_policy on several ranks) made available are skipped
            with gathered(_sub):
                return _orig(*args, **kw)

        sub.save_pretrained = save_pretrained


def clip_as_deepspeed(grads: list[Any], max_norm: float) -> None:
    """Scale ``grads`` in place as ``deepspeed.runtime.utils.clip_grad_norm_`` does (the same
    float arithmetic: the 2-norm of the per-tensor float norms, the coefficient
    ``min(1, max_norm / (norm + 1e-6))``), without its all-reduce of the norm."""
    import torch

    if not grads:
        return
    norm = torch.stack([g.detach().float().norm(2) for g in grads]).pow(2).sum().float().pow(0.5)
    coef = torch.min(torch.tensor([1.0]), torch.tensor([float(max_norm)]) / (norm + 1e-6))
    for g in grads:
        g.data.mul_(coef.to(g.device))


@ENGINES.register("deepspeed", help="DeepSpeed ZeRO 0-3 (optional CPU offload, bf16)")
class DeepSpeedEngine:
    """A model wrapped by ``deepspeed.initialize``; the torch engine's interface."""

    def __init__(self, model: Any, cfg: OptimConfig, engine: EngineConfig):
        deepspeed = import_deepspeed()
        from deepspeed.accelerator import get_accelerator
        from deepspeed.utils import logger as ds_logger

        ds_logger.setLevel(logging.WARNING)

        self.cfg = cfg
        self.on_cpu = get_accelerator().device_name() == "cpu"
        self.bf16 = engine.bf16
        if engine.bf16 and self.on_cpu:
            raise UserError("deepspeed: bf16 is a GPU option; on the CPU accelerator use float32")
        self.config = ds_config(cfg, engine, on_cpu=self.on_cpu)
        self.stage = self.config["zero_optimization"]["stage"]
        # ZeRO-0 in float32: after the gradient all-reduce every rank holds the same averaged
        # gradients, so this rank's norm is the global one, and DeepSpeed's clip would meet the
        # other ranks once more a step to average it (2.5-5 ms on a CPU host): clip here instead
        self.clip = (float(self.config.get("gradient_clipping") or 0.0)
                     if self.stage == 0 and not self.bf16 else 0.0)
        if self.clip:
            self.config = {**self.config, "gradient_clipping": 0.0}
        init_process_group(deepspeed, self.on_cpu)
        params = [p for p in model.parameters() if p.requires_grad]
        try:
            self.engine, self.optimizer, _, _ = deepspeed.initialize(
                model=model, model_parameters=params, config=self.config
            )
        except (ValueError, AssertionError) as e:
            raise UserError(f"deepspeed config rejected: {e}") from None
        self.module = self.engine.module
        self.device = self.engine.device
        if not self.on_cpu:
            follow_inputs(self.module, self.device)
        if self.stage == 3:
            gather_on_save(self.module)
        self.engine.train()

    @property
    def rank(self) -> int:
        import torch.distributed as dist

        return dist.get_rank()

    @property
    def world_size(self) -> int:
        import torch.distributed as dist

        return dist.get_world_size()

    def step(self, loss: Any) -> float:
        """Backward (gradients averaged over ranks), clip, update; the pre-clip grad norm."""
        self.engine.backward(loss)
        pre_clip = None
        if self.stage == 0 and not self.bf16:  # DeepSpeed reports no norm at fp32 stage 0
            import torch

            grads = [p.grad for p in self.module.parameters() if p.grad is not None]
            pre_clip = torch.nn.utils.get_total_norm(grads)
            if self.clip:
                clip_as_deepspeed(grads, self.clip)
        self.engine.step()
        norm = self.engine.get_global_grad_norm() if pre_clip is None else pre_clip
        return float(norm) if norm is not None else float("nan")

    def set_lr(self, lr: float) -> None:
        for group in self.engine.optimizer.param_groups:
            group["lr"] = lr

    @property
    def lr(self) -> float:
        return float(self.engine.optimizer.param_groups[0]["lr"])

    def save_state(self, path: Path) -> None:
        """DeepSpeed's own checkpoint (module, ZeRO-partitioned optimizer state); every rank."""
        self.engine.save_checkpoint(str(path), tag="state")

    def load_state(self, path: Path) -> None:
        load_path, _ = self.engine.load_checkpoint(str(path), tag="state",
                                                   load_optimizer_states=True,
                                                   load_lr_scheduler_states=False)
        if load_path is None:
            raise UserError(f"{path}: DeepSpeed found no checkpoint to resume from")

    def save(self, tokenizer: Any, out_dir: str | os.PathLike) -> Path:
        """Full weights (gathered at stage 3) via ``save_pretrained``, written by rank 0; every
        rank must call it and leaves after a barrier."""
        return save_policy(self.module, tokenizer, out_dir)
