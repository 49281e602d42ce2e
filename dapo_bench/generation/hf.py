"""The ``hf`` backend: transformers causal LMs, batched, on CPU (or one GPU).

How it generates (our own decode loop over the model's forward with a KV cache, because
``model.generate`` cannot share one prompt's cache across its ``n`` samples):

- Prompts (text or token ids, ``base.encode_prompts``) are sorted by length
  (longest first) and cut into groups of at most ``max(1, batch_size // n)`` prompts; a group
  also ends before a prompt shorter than ``PAD_FILL`` (3/4) of the group's first, longest one
  (:func:`length_groups`), so left padding is under a quarter of any group's prefill. Without
  that bound one long MATH500 problem padded a 100-prompt batch to ~4x its prompt tokens and
  the prefill took most of the batch's time. Results come back in input order.
- A group is left-padded and encoded ONCE (prefill); its KV cache is then repeated ``n`` times
  (``DynamicCache.batch_repeat_interleave``), so ``n`` samples from one long prefix cost one
  prefix forward (DAPO's Monte Carlo completions). ``last_prompt_tokens`` counts each prompt's
  tokens once.
- Each step feeds one token per live row; rows that end (EOS or a stop string) leave the batch
  and the cache (``batch_select_indices``), so a batch costs what its live rows cost.
- ``temperature == 0``: greedy argmax, the same tokens as ``model.generate(do_sample=False)``.
  Otherwise temperature and top-p (nucleus) sampling by inverse CDF with one uniform number per
  row and step drawn from that row's own ``torch.Generator``, seeded from (seed, prompt,
  occurrence of that prompt in the call, sample index): a prompt's samples do not depend on which
  other prompts share its batch or on ``batch_size`` (up to float rounding of batched matmuls).
- Stop strings: a row stops at the step whose token completes a stop string; its text is cut
  before the first occurrence. ``n_tokens`` counts the generated tokens (EOS included).
- Log-probs (on request) are those of the sampled tokens under the unmodified distribution
  (temperature 1, no top-p), as the interface specifies.

Not covered: beam search, repetition penalties, prompts longer than the model's context (no
truncation is done), more than one device, or rows beyond ``batch_size`` when ``n`` exceeds it
(one prompt's ``n`` samples always share one batch).
"""

from __future__ import annotations

import inspect
from functools import cache as memoize
from typing import Any

import torch
from transformers import DynamicCache

from dapo_bench.errors import UserError
from dapo_bench.generation.base import (
    GENERATORS,
    Completion,
    Generator,
    Prompt,
    SamplingParams,
    cut_at_stop,
    encode_prompts,
    row_seeds,
)
from dapo_bench.models import Policy, count_params, load_policy

_DTYPES = ("float32", "bfloat16", "float16")


def pick_tokens(logits: torch.Tensor, u: torch.Tensor | None, params: SamplingParams):
    """Next token per row from float32 ``logits`` [A, V]; ``u`` [A] uniforms in [0, 1)."""
    if params.temperature == 0 or u is None:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits / params.temperature, dim=-1)
    if params.top_p < 1.0:
        probs, order = probs.sort(dim=-1, descending=True)
        keep = (probs.cumsum(dim=-1) - probs) < params.top_p
        probs = probs * keep
    else:
        order = None
    cdf = probs.cumsum(dim=-1)
    target = (u * cdf[:, -1]).unsqueeze(1)
    idx = torch.searchsorted(cdf, target, right=True).clamp_(max=logits.size(-1) - 1)
    return (order.gather(1, idx) if order is not None else idx).squeeze(1)


@GENERATORS.register(
    "hf", help="transformers: batched, left-padded, KV cache, n samples share the prompt's cache"
)
class HFGenerator(Generator):
    """A transformers causal LM (local directory or hub id) behind the Generator interface."""

    backend = "hf"

    def __init__(
        self,
        model: str | Policy,
        *,
        dtype: str = "float32",
        device: str = "auto",
        batch_size: int = 64,
        threads: int | None = None,
    ):
        """``threads``: if given, ``torch.set_num_threads(threads)`` (process-wide). For tiny
        models on a busy CPU use 1: measured 27x faster than 2 threads on a loaded 2-core box."""
        if threads is not None:
            if threads < 1:
                raise UserError(f"hf backend: threads must be >= 1, got {threads}")
            torch.set_num_threads(threads)
        if dtype not in _DTYPES:
            raise UserError(f"hf backend: dtype must be one of {', '.join(_DTYPES)}, got {dtype!r}")
        if batch_size < 1:
            raise UserError(f"hf backend: batch_size must be >= 1, got {batch_size}")
        self.model_path = str(model.path if isinstance(model, Policy) else model)
        self.dtype = dtype
        self.batch_size = batch_size
        if isinstance(model, Policy) and (dtype, device) == ("float32", model.device):
            self._model, self._tok = model.model, model.tokenizer  # loaded once, shared
        else:
            self._model, self._tok = load_policy(self.model_path, dtype=dtype, device=device)
        self.device = str(self._model.device)
        self._model.eval()
        self.last_prompt_tokens = 0
        self.last_generated_tokens = 0

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, *, batch_size: int = 64) -> HFGenerator:
        """Wrap an already loaded model (e.g. one being trained) without reading a directory."""
        gen = cls.__new__(cls)
        gen.model_path, gen.batch_size = "<in-memory>", batch_size
        gen.dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
        gen.device = str(model.device)
        gen._model, gen._tok = model, tokenizer
        gen.last_prompt_tokens = gen.last_generated_tokens = 0
        return gen

    @property
    def tokenizer(self) -> Any:
        return self._tok

    @property
    def model(self) -> Any:
        return self._model

    @property
    def n_params(self) -> int:
        return count_params(self._model)

    def update_weights(self, model_dir: str) -> None:
        model, _ = load_policy(model_dir, dtype=self.dtype, device=self.device)
        self._swap(model, str(model_dir))

    def serve(self, policy: Policy) -> None:
        """Serve the policy's model in memory (no read when it is loaded already)."""
        if self.dtype != "float32":
            return self.update_weights(policy.path)
        self._swap(policy.model, policy.path)

    def _swap(self, model: Any, path: str) -> None:
        if type(model) is not type(self._model) or model.config.vocab_size != len(self._tok):
            raise UserError(f"{path}: not the same architecture as {self.model_path}")
        self._model = model.eval()
        self.model_path = path

    def close(self) -> None:
        self._model = None

    def _eos_ids(self) -> list[int]:
        ids = {self._tok.eos_token_id}
        gen_eos = getattr(self._model.generation_config, "eos_token_id", None)
        ids.update(gen_eos if isinstance(gen_eos, list) else [gen_eos])
        return sorted(i for i in ids if i is not None)

    @torch.inference_mode()
    def generate(self, prompts: list[Prompt], params: SamplingParams) -> list[list[Completion]]:
        enc, keys = encode_prompts(self._tok, prompts)
        enc = [e or [self._tok.eos_token_id] for e in enc]
        seeds = row_seeds(params.seed, keys, params.n)
        results: list[list[Completion]] = [[] for _ in prompts]
        order = sorted(range(len(prompts)), key=lambda i: -len(enc[i]))
        groups = length_groups([len(enc[i]) for i in order], max(1, self.batch_size // params.n))
        self.last_prompt_tokens = sum(len(e) for e in enc)
        self.last_generated_tokens = 0
        was_training = self._model.training
        self._model.eval()
        try:
            for members in groups:
                idx = [order[k] for k in members]
                done = self._generate_group([enc[i] for i in idx], [seeds[i] for i in idx], params)
                for i, comps in zip(idx, done):
                    results[i] = comps
                    self.last_generated_tokens += sum(c.n_tokens for c in comps)
        finally:
            self._model.train(was_training)
        return results

    def _forward(self, ids, mask, pos, cache):
        """One forward step over ``cache`` (a ``DynamicCache``, extended in place).

        Only the last position's logits are used: the LM head over every prefill position is
        ~20% of a 135M model's prefill (what ``generate`` skips the same way).
        """
        kw = _cache_argument(self._model)
        keep = {"logits_to_keep": 1} if self._model._supports_logits_to_keep() else {}
        out = self._model(input_ids=ids, attention_mask=mask, position_ids=pos,
                          use_cache=True, **{kw: cache}, **keep)
        return out.logits[:, -1, :].float(), getattr(out, kw)

    def _generate_group(self, ids_list, seeds, params: SamplingParams) -> list[list[Completion]]:
        n, steps, dev = params.n, params.max_new_tokens, self._model.device
        width = max(len(x) for x in ids_list)
        ids = torch.full((len(ids_list), width), self._tok.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(ids_list), width), dtype=torch.long)
        for r, x in enumerate(ids_list):
            ids[r, width - len(x) :] = torch.tensor(x, dtype=torch.long)
            mask[r, width - len(x) :] = 1
        rows = len(ids_list) * n
        tokens = torch.zeros((rows, steps), dtype=torch.long)
        lps = torch.zeros((rows, steps))
        length = [steps] * rows
        finish = ["length"] * rows
        if steps > 0:
            self._decode(ids.to(dev), mask.to(dev), seeds, params, tokens, lps, length, finish)
        out = []
        for p in range(len(ids_list)):
            comps = []
            for r in range(p * n, (p + 1) * n):
                toks = tokens[r, : length[r]].tolist()
                text = self._tok.decode(toks, skip_special_tokens=True)
                text, stopped = cut_at_stop(text, params.stop)
                if stopped:
                    finish[r] = "stop"
                comps.append(
                    Completion(
                        text=text,
                        n_tokens=len(toks),
                        finish_reason=finish[r],
                        token_ids=toks,
                        logprobs=lps[r, : length[r]].tolist() if params.logprobs else None,
                    )
                )
            out.append(comps)
        return out

    def _decode(self, ids, mask, seeds, params, tokens, lps, length, finish) -> None:
        """Prefill once, share the cache across n samples, decode until every row ends."""
        n, steps, dev = params.n, params.max_new_tokens, ids.device
        pos = (mask.cumsum(-1) - 1).masked_fill_(mask == 0, 1)
        logits, cache = self._forward(ids, mask, pos, DynamicCache(config=self._model.config))
        pos = pos[:, -1]
        if n > 1:
            cache.batch_repeat_interleave(n)
            mask, pos, logits = (t.repeat_interleave(n, dim=0) for t in (mask, pos, logits))
        uniforms = None
        if params.temperature > 0:
            gens = [torch.Generator().manual_seed(s) for row in seeds for s in row]
            uniforms = torch.stack([torch.rand(steps, generator=g) for g in gens]).to(dev)
        eos = torch.tensor(self._eos_ids(), dtype=torch.long, device=dev)
        stops = [s for s in params.stop if s]
        tail = max((len(s) for s in stops), default=0) + 1
        live = torch.arange(len(length), device=dev)
        for t in range(steps):
            nxt = pick_tokens(logits, None if uniforms is None else uniforms[live, t], params)
            rows = live.cpu()
            tokens[rows, t] = nxt.cpu()
            if params.logprobs:
                lp = torch.log_softmax(logits, dim=-1).gather(1, nxt.unsqueeze(1)).squeeze(1)
                lps[rows, t] = lp.cpu()
            ended = torch.isin(nxt, eos).cpu()
            if stops:
                for k, r in enumerate(rows.tolist()):
                    if not ended[k]:
                        text = self._tok.decode(tokens[r, max(0, t + 1 - tail) : t + 1].tolist())
                        ended[k] = any(s in text for s in stops)
            for k in ended.nonzero().flatten().tolist():
                r = int(rows[k])
                length[r], finish[r] = t + 1, "stop"
            keep = (~ended).nonzero().flatten()
            if t == steps - 1 or len(keep) == 0:
                break
            if len(keep) < len(rows):
                keep_dev = keep.to(dev)
                cache.batch_select_indices(keep_dev)
                mask, pos, nxt, live = mask[keep_dev], pos[keep_dev], nxt[keep_dev], live[keep_dev]
            mask = torch.cat([mask, mask.new_ones((len(live), 1))], dim=1)
            pos = pos + 1
            logits, cache = self._forward(nxt.unsqueeze(1), mask, pos.unsqueeze(1), cache)


# a prompt joins a group only while it is at least this share of the group's longest prompt
PAD_FILL = 0.75


def length_groups(lengths: list[int], size: int) -> list[list[int]]:
    """Positions of ``lengths`` (sorted longest first) cut into consecutive groups of at most
    ``size``, each ending before a length under ``PAD_FILL`` of the group's first."""
    out: list[list[int]] = []
    for k, n in enumerate(lengths):
        if not out or len(out[-1]) == size or n < PAD_FILL * lengths[out[-1][0]]:
            out.append([])
        out[-1].append(k)
    return out


@memoize
def _forward_cache_name(forward_cls: type[torch.nn.Module]) -> str:
    params = inspect.signature(forward_cls.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _cache_argument(model: Any) -> str:
    """The name of the KV cache in ``model``'s forward and output: ``cache`` in transformers
    5.24 (which still takes ``past_key_values`` but warns that it is deprecated, on every
    call), ``past_key_values`` in 5.19 (the range pyproject allows spans the rename)."""
    # a class is hashable; mypy does not match a type[...] to functools.cache's Hashable
    return _forward_cache_name(type(model))  # type: ignore[arg-type]
