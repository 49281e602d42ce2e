"""Pieces shared by the baseline methods (SFT, RFT, DPO, GRPO, PPO).

- :func:`online_policy`: a generator that samples from the weights being trained.
- :func:`sample_groups`: sample ``n`` responses per problem from a generator, scored, in chunks,
  charging the compute ledger and stopping early once a token budget (a share of the FLOP
  budget) is spent. RFT and DPO train on these groups; GRPO and PPO call it every step.
- :func:`groups_to_batch`: (prompt, response) rows -> a ``PairBatch`` with outcome rewards.
- :func:`chunked_logprobs`: per-token log-probs of a big batch, in row chunks, no grad.

Ledger accounting: sampling charges prompt tokens (once per prompt) plus generated tokens as
inference; a scoring forward pass charges the tokens it processes (no padding) as inference.

Not covered: re-tokenisation subtleties of real tokenizers: responses are re-encoded from their
text with ``encode_pairs`` (exact for the character-level toy tokenizer; for BPE tokenizers the
re-encoded ids can differ from the sampled ones), and a response that stopped on EOS gets the
EOS token appended so its log-prob includes stopping.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from dapo_bench.generation.base import Generator, SamplingParams
from dapo_bench.ledger import Ledger
from dapo_bench.training.common import (
    PairBatch,
    encode_pairs,
    load_policy,
    save_policy,
    token_logprobs,
)
from dapo_bench.training.rollouts import Score, TrainProblem, collect_rollouts, generated_tokens


class OnlinePolicy:
    """The policy an online method trains, and a generator that samples from its weights.

    With the ``hf`` backend the generator's own torch model is trained in place (no copy, no
    reload). Any other backend (vLLM) gets a separate torch copy; :meth:`sync` saves it to
    ``sync_dir`` and calls ``generator.update_weights`` (call it before each rollout).
    """

    def __init__(self, generator: Generator, model_dir: str, sync_dir: str | Path):
        self.generator = generator
        own = getattr(generator, "model", None)
        self.in_place = isinstance(own, torch.nn.Module)
        if self.in_place:
            self.model, self.tokenizer = own, generator.tokenizer
        else:
            self.model, self.tokenizer = load_policy(model_dir)
        self.sync_dir = Path(sync_dir)
        self._dirty = False

    @classmethod
    def load(cls, backend: str, model_dir: str, sync_dir: str | Path,
             **gen_options: Any) -> OnlinePolicy:
        """A fresh generator of ``backend`` for ``model_dir`` (never one shared with eval)."""
        from dapo_bench.generation.base import load_generator

        return cls(load_generator(backend, model_dir, **gen_options), model_dir, sync_dir)

    def mark_updated(self) -> None:
        self._dirty = True

    def sync(self) -> None:
        if self.in_place or not self._dirty:
            return
        save_policy(self.model, self.tokenizer, self.sync_dir)
        self.generator.update_weights(str(self.sync_dir))
        self._dirty = False

    def close(self) -> None:
        self.generator.close()


def shuffled_cycle(problems: Sequence[TrainProblem], seed: int):
    """Yield problems forever: each pass over them in a fresh seeded order."""
    rng = random.Random(seed)
    while True:
        order = list(problems)
        rng.shuffle(order)
        yield from order


@dataclass
class Group:
    """The samples of one prompt: texts, rewards, and whether each ended by stopping."""

    problem: TrainProblem
    texts: list[str]
    rewards: list[float]
    stopped: list[bool]

    @property
    def passed(self) -> list[bool]:
        return [r > 0.5 for r in self.rewards]


def sample_groups(
    generator: Generator,
    problems: Sequence[TrainProblem],
    n: int,
    score: Score,
    params: SamplingParams,
    *,
    ledger: Ledger,
    stage: str = "rollout",
    chunk_size: int = 64,
    max_inf_tokens: float | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Group]:
    """``n`` scored samples per problem; stops between chunks once ``ledger`` is exhausted or
    this call's inference tokens reach ``max_inf_tokens``. Chunk k samples with seed
    ``params.seed + k`` (as ``collect_rollouts`` does), so results do not depend on the budget.
    """
    groups: list[Group] = []
    spent = 0
    for k, start in enumerate(range(0, len(problems), chunk_size)):
        if ledger.exhausted() or (max_inf_tokens is not None and spent >= max_inf_tokens):
            break
        chunk = list(problems[start : start + chunk_size])
        sp = SamplingParams(**{**params.__dict__, "seed": params.seed + k})
        rows = collect_rollouts(generator, chunk, n, score, params=sp, chunk_size=len(chunk))
        tokens = generated_tokens(rows, "responses")
        ledger.add_inf(stage, tokens)
        spent += tokens
        for p, r in zip(chunk, rows):
            rs = r["responses"]
            groups.append(Group(p, [c["text"] for c in rs], [float(c["reward"]) for c in rs],
                                [c["finish_reason"] == "stop" for c in rs]))
        if progress:
            progress(len(chunk))
    return groups


@dataclass
class RolloutBatch:
    """Flattened rows of some groups, tokenised, with outcome rewards and group ids."""

    batch: PairBatch
    rewards: list[float]
    group: list[str]

    def rows(self, idx: Sequence[int]) -> PairBatch:
        i = torch.as_tensor(list(idx), dtype=torch.long)
        b = self.batch
        return PairBatch(b.input_ids[i], b.attention_mask[i], b.response_mask[i])


def groups_to_batch(tokenizer, groups: Sequence[Group], max_length: int = 1024) -> RolloutBatch:
    prompts, texts, eos, rewards, gid = [], [], [], [], []
    for g in groups:
        for t, r, s in zip(g.texts, g.rewards, g.stopped):
            prompts.append(g.problem.prompt)
            texts.append(t)
            eos.append(s)
            rewards.append(r)
            gid.append(g.problem.id)
    batch = encode_pairs(tokenizer, prompts, texts, max_length=max_length, add_eos=eos)
    return RolloutBatch(batch, rewards, gid)


def slice_rows(t: torch.Tensor, idx: Sequence[int]) -> torch.Tensor:
    return t[torch.as_tensor(list(idx), dtype=torch.long)]


@torch.no_grad()
def chunked_logprobs(
    model, rb: RolloutBatch, *, chunk: int = 256, ledger: Ledger | None = None, stage: str = ""
) -> torch.Tensor:
    """``token_logprobs`` of every row of ``rb`` ([B, L]), ``chunk`` rows per forward pass."""
    was_training = model.training
    model.eval()
    n = rb.batch.input_ids.size(0)
    out = torch.zeros(rb.batch.input_ids.shape)
    for s in range(0, n, chunk):
        idx = list(range(s, min(n, s + chunk)))
        mb = rb.rows(idx)
        out[idx] = token_logprobs(model, mb).float()
        if ledger is not None:
            ledger.add_inf(stage, mb.n_tokens)
    model.train(was_training)
    return out


def minibatches(n: int, size: int, seed: int) -> list[list[int]]:
    """Row indices ``0..n-1`` shuffled (seeded) and cut into lists of at most ``size``."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [order[s : s + size] for s in range(0, n, max(1, size))]


def frozen_copy(model: Any) -> Any:
    """pi_ref: a copy of ``model`` in eval mode with no gradients."""
    ref = copy.deepcopy(model).eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    return ref


def sample_step(policy: OnlinePolicy, stream, n_prompts: int, n_samples: int, score: Score,
                params: SamplingParams, *, ledger: Ledger, stage: str,
                max_length: int) -> RolloutBatch:
    """One online step's rollouts: the next ``n_prompts`` problems of ``stream``, ``n_samples``
    each, sampled from the policy's current weights, scored and tokenised."""
    policy.model.eval()
    policy.sync()
    probs = [next(stream) for _ in range(n_prompts)]
    groups = sample_groups(policy.generator, probs, n_samples, score, params, ledger=ledger,
                           stage=stage, chunk_size=n_prompts)
    return groups_to_batch(policy.tokenizer, groups, max_length)


def step_log(step: int, rb: RolloutBatch, ledger: Ledger, t0: float, stats: dict) -> dict:
    """The history row of an online step: mean reward, response length, FLOPs so far, stats."""
    n = max(len(rb.rewards), 1)
    return {"step": step + 1, "reward": sum(rb.rewards) / n,
            "response_tokens": float(rb.batch.response_mask.sum()) / n,
            "flops": ledger.total_flops, "seconds": round(time.perf_counter() - t0, 2), **stats}
