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
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

from dapo_bench.registry import Registry

Prompt = Union[str, Sequence[int]]  # noqa: UP007 (a runtime alias on Python 3.10 too)


@dataclass(frozen=True)
class SamplingParams:
    n: int = 1
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0
    max_new_tokens: int = 512
    stop: tuple[str, ...] = ()
    seed: int = 0
    logprobs: bool = False


@dataclass
class Completion:
    text: str
    n_tokens: int
    finish_reason: str  # "stop" (EOS or stop string) | "length"
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None


class Generator(ABC):
    """A loaded model that turns prompts into completions."""

    backend: str = ""
    last_prompt_tokens: int = 0

    @abstractmethod
    def generate(self, prompts: list[Prompt], params: SamplingParams) -> list[list[Completion]]:
        """For each prompt, ``params.n`` completions."""

    @property
    @abstractmethod
    def tokenizer(self) -> Any: ...

    @property
    @abstractmethod
    def n_params(self) -> int: ...

    def update_weights(self, model_dir: str) -> None:
        """Make the generator serve the weights saved in ``model_dir`` (same architecture)."""
        raise NotImplementedError(f"{self.backend} cannot update weights in place")

    def serve(self, policy: Any) -> None:
        """Serve ``policy`` (a ``models.Policy``): by default the weights saved at its path;
        the hf backend takes its model in memory instead."""
        self.update_weights(policy.path)

    def close(self) -> None:
        """Release the model and any worker processes."""


def encode_prompts(tokenizer: Any, prompts: Sequence[Prompt]) -> tuple[list[list[int]], list[str]]:
    """(token ids, seed key) of each prompt. The seed key is the decoded ids (special tokens
    kept), so a prompt given as text or as its ids samples the same."""
    from dapo_bench.models import encode_prompt

    ids = [encode_prompt(tokenizer, p) if isinstance(p, str) else list(p) for p in prompts]
    return ids, [tokenizer.decode(i) for i in ids]


GENERATORS: Registry[type] = Registry(
    "generator backend",
    modules=["dapo_bench.generation.hf", "dapo_bench.generation.vllm"],
)


def load_generator(backend: str, model: Any, **options: Any) -> Generator:
    """Instantiate a registered backend for a local model directory or hub id, or a
    ``models.Policy`` (hf: its model in memory; vllm: its path)."""
    return GENERATORS.get(backend)(model, **options)
