"""The Generator interface shared by every backend.

A prompt is a fully rendered string (the task applies the chat template) or its token ids (a
list of ints: what training passes, so that sampling sees exactly the ids it trains on). A
string is tokenised by ``models.encode_prompt``, the one tokenisation every path uses
(:func:`encode_prompts`). A backend returns,
for each prompt, ``params.n`` completions in a fixed order; with the same seed, prompts and
params it returns the same texts. ``stop`` strings end a completion and are not included in
its text. Token log-probs (of the sampled tokens, under the unmodified model distribution at
temperature 1) are returned only when ``params.logprobs`` is set.

Token accounting for the compute ledger: ``Completion.n_tokens`` counts generated tokens;
``Generator.last_prompt_tokens`` counts prompt tokens the last call encoded (shared prefixes
counted once where the backend shares them).

A backend that talks to a server (``openai``) sees text, not token ids: its completions have
``token_ids`` None and the class says ``token_ids = False`` (training, which trains on the ids
it sampled, refuses it); with ``prompt_format = "messages"`` it takes a chat as a list of
``{"role", "content"}`` dicts instead of a rendered prompt (the server applies the template). A
request that fails for good is a completion with ``error`` set (no text, no verdict): an
infrastructure outcome the caller counts, never a 0.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

from dapo_bench.errors import UserError
from dapo_bench.registry import Registry

Prompt = Union[str, Sequence[int]]  # noqa: UP007 (a runtime alias on Python 3.10 too)


@dataclass(frozen=True)
class SamplingParams:
    """How to sample; checked when made, so that every backend (a plug-in's too) gets only
    settings it can honour: n >= 1, temperature >= 0 (0 = greedy), top_p in (0, 1],
    max_new_tokens >= 0."""

    n: int = 1
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0
    max_new_tokens: int = 512
    stop: tuple[str, ...] = ()
    seed: int = 0
    logprobs: bool = False

    def __post_init__(self) -> None:
        if self.n < 1:
            raise UserError(f"sampling: n must be >= 1, got {self.n}")
        if self.temperature < 0:
            raise UserError(f"sampling: temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise UserError(f"sampling: top_p must be in (0, 1], got {self.top_p}")
        if self.max_new_tokens < 0:
            raise UserError(f"sampling: max_new_tokens must be >= 0, got {self.max_new_tokens}")


@dataclass
class Completion:
    text: str
    n_tokens: int
    finish_reason: str  # "stop" (EOS or stop string) | "length"
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    reasoning: str | None = None  # thinking a server returned apart (``reasoning_content``)
    error: str | None = None  # the request failed for good: no text, an infrastructure outcome
    meta: dict[str, Any] | None = None  # what a server reported (usage, its finish reason, model)


class Generator(ABC):
    """A loaded model that turns prompts into completions."""

    backend: str = ""
    last_prompt_tokens: int = 0
    token_ids: bool = True  # completions carry the generated ids (training needs them)
    prompt_format: str = "text"  # "text": rendered prompts (or ids); "messages": chats

    @abstractmethod
    def generate(self, prompts: list[Prompt], params: SamplingParams) -> list[list[Completion]]:
        """For each prompt, ``params.n`` completions."""

    @property
    @abstractmethod
    def tokenizer(self) -> Any: ...

    @property
    @abstractmethod
    def n_params(self) -> int | None: ...  # None: not known here (a served model)

    def update_weights(self, model_dir: str) -> None:
        """Make the generator serve the weights saved in ``model_dir`` (same architecture)."""
        raise NotImplementedError(f"{self.backend} cannot update weights in place")

    def serve(self, policy: Any) -> None:
        """Serve ``policy`` (a ``models.Policy``): by default the weights saved at its path;
        the hf backend takes its model in memory instead."""
        self.update_weights(policy.path)

    def close(self) -> None:
        """Release the model and any worker processes."""

    def keep_responses(self, path: Any) -> None:
        """Log each answered request to ``path`` and answer a request found there from it, so
        that a rerun sends only what is missing (a backend with costly independent requests:
        ``openai``); other backends ignore it."""

    def fingerprint(self) -> dict[str, Any]:
        """Backend settings the samples depend on besides the model and the sampling
        parameters (an eval refuses to mix samples made with other ones)."""
        return {}

    def provenance(self) -> dict[str, Any] | None:
        """What results.json records about the backend beyond the model (None: nothing)."""
        return None


def row_seed(seed: int, prompt: str, occurrence: int, sample: int) -> int:
    """The RNG seed of one sample: a hash of what identifies it, independent of batching."""
    h = hashlib.sha256(f"{seed}\x1f{occurrence}\x1f{sample}\x1f{prompt}".encode()).digest()
    return int.from_bytes(h[:8], "big") & ((1 << 63) - 1)


def row_seeds(seed: int, keys: Sequence[str], n: int) -> list[list[int]]:
    """The :func:`row_seed` of each of a call's prompts' ``n`` samples, prompt by prompt
    (``keys``: each prompt's seed key); a prompt that comes again in the call counts as its
    next occurrence, so its samples are new ones. The one seeding rule of every backend."""
    seen: Counter[str] = Counter()
    out = []
    for key in keys:
        out.append([row_seed(seed, key, seen[key], j) for j in range(n)])
        seen[key] += 1
    return out


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """``text`` cut before the first occurrence of any stop string, and whether one occurred."""
    cut = [k for k in (text.find(s) for s in stop if s) if k >= 0]
    return (text[: min(cut)], True) if cut else (text, False)


def encode_prompts(tokenizer: Any, prompts: Sequence[Prompt]) -> tuple[list[list[int]], list[str]]:
    """(token ids, seed key) of each prompt. The seed key is the decoded ids (special tokens
    kept), so a prompt given as text or as its ids samples the same."""
    from dapo_bench.models import encode_prompt

    ids = [encode_prompt(tokenizer, p) if isinstance(p, str) else list(p) for p in prompts]
    return ids, [tokenizer.decode(i) for i in ids]


GENERATORS: Registry[type[Generator]] = Registry(
    "generator backend",
    modules=["dapo_bench.generation.hf", "dapo_bench.generation.vllm",
             "dapo_bench.generation.openai"],
)


def load_generator(backend: str, model: Any, **options: Any) -> Generator:
    """Instantiate a registered backend for a local model directory or hub id, or a
    ``models.Policy`` (hf: its model in memory; vllm: its path); openai: the served model's
    name."""
    return GENERATORS.get(backend)(model, **options)  # type: ignore[call-arg]  # (model, **opts)
