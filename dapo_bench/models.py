"""Policies on disk: load and save a causal LM with its tokenizer, count its parameters.

Generation and training both come here for a model (neither imports the other for it).
``load_policy`` reads a local directory or a hub id (padding on the left, a pad token where the
tokenizer has none); ``save_policy`` writes atomically beside the target and renames into place.
With several ranks ``save_policy`` is a collective: ZeRO-3 parameters are gathered on every rank,
rank 0 writes, and all leave after a barrier (so the others can then read the directory).

Not covered: adapters (LoRA), sharded checkpoints of optimizer state, quantised weights.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from dapo_bench import dist
from dapo_bench.errors import UserError


def load_policy(path: str | os.PathLike, *, dtype: str = "float32", device: str = "cpu"):
    """Load (model, tokenizer) from a local directory or a hub id; padding on the left."""
    import torch
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
    """Save atomically; with several ranks every rank must call it (see the module doc)."""
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
