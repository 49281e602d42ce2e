"""Sampling from a policy, step segmentation, and Monte Carlo value labels.

Reusable by every method that samples from pi_ref and scores with a verifier (DAPO, RFT, DPO):

- :func:`collect_rollouts` samples ``n`` responses per problem and scores them.
- :func:`select_balanced` keeps ``n`` of them, balanced between correct and wrong.
- :func:`split_steps` / :func:`make_states` cut a response at ``\\n`` into steps and prefix states.
- :func:`mc_label_states` gives every state ``m`` completions and a label (fraction accepted).

Generation runs in fixed chunks of items; each chunk's sampling seed depends only on its index,
so a stage killed part-way and rerun (through :class:`ResumableLog`) regenerates exactly the
chunks it lacks and produces the same rows as an uninterrupted run. Completions of one state are
requested as ``n`` samples of one prompt, so a backend that shares a prompt's KV cache across its
samples (HF) or caches prefixes (vLLM) encodes each prefix once.

Not covered: multi-turn prompts, tool calls, rewards other than a verifier's pass/fail.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from dapo_bench.generation.base import Generator, SamplingParams
from dapo_bench.io import JsonlAppender, iter_jsonl

# (response texts, their problem ids) -> one reward in [0, 1] per text, e.g. methods.data.Scorer
Score = Callable[[list[str], list[str]], list[float]]


@dataclass(frozen=True)
class TrainProblem:
    """A training problem: a rendered prompt, the gold answer, optionally a gold solution."""

    id: str
    prompt: str
    gold: str
    solution: str | None = None


# --------------------------------------------------------------------------- steps and states
def split_steps(response: str) -> list[str]:
    """Steps of a response: pieces ending at each ``\\n`` (kept), plus the unterminated tail.

    ``"".join(split_steps(r)) == r``; an empty response has no steps.
    """
    steps = [s + "\n" for s in response.split("\n")]
    steps[-1] = steps[-1][:-1]
    return [s for s in steps if s]


def make_states(prompt: str, response: str) -> list[dict]:
    """Prefix states s_0..s_{T-1} of a response of T steps: ``prefix`` = steps before t.

    s_0 is the bare prompt (empty prefix); the step taken in s_t is ``steps[t]``.
    """
    steps = split_steps(response)
    return [
        {"t": t, "prefix": "".join(steps[:t]), "action": steps[t], "n_steps": len(steps)}
        for t in range(len(steps))
    ]


# --------------------------------------------------------------------------- resumable chunks
class ResumableLog:
    """Append-only JSONL of rows keyed by ``key``; knows which keys are already done.

    A half-written last line (a kill during a write) is dropped on open.
    """

    def __init__(self, path: str | Path, key: str = "key"):
        self.path = Path(path)
        self.key = key
        self._app = JsonlAppender(self.path)  # repairs a cut tail first
        self.done: dict[str, dict] = {}
        if self.path.stat().st_size:
            for row in iter_jsonl(self.path):
                self.done[row[key]] = row

    def add(self, row: dict) -> None:
        if row[self.key] in self.done:
            return
        self._app.write(row)
        self.done[row[self.key]] = row

    def close(self) -> None:
        self._app.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_chunked(
    items: Sequence[dict],
    key: str,
    chunk_size: int,
    work: Callable[[list[dict], int], list[dict]],
    log: ResumableLog,
    progress: Callable[[int], None] | None = None,
) -> list[dict]:
    """Run ``work(chunk, chunk_index)`` over fixed chunks of ``items``, skipping finished ones.

    ``work`` returns one row per item (same order, with ``key``). Rows are appended as chunks
    finish; a chunk only partly logged before a kill is recomputed and its missing rows added.
    Returns the rows of all items, in item order.
    """
    for ci in range(0, len(items), chunk_size):
        chunk = list(items[ci : ci + chunk_size])
        if all(it[key] in log.done for it in chunk):
            if progress:
                progress(len(chunk))
            continue
        for row in work(chunk, ci // chunk_size):
            log.add(row)
        if progress:
            progress(len(chunk))
    return [log.done[it[key]] for it in items]


# --------------------------------------------------------------------------- rollouts
def collect_rollouts(
    generator: Generator,
    problems: Sequence[TrainProblem],
    n: int,
    score: Score,
    *,
    params: SamplingParams,
    log_path: str | Path | None = None,
    chunk_size: int = 32,
    progress: Callable[[int], None] | None = None,
) -> list[dict]:
    """Sample ``n`` responses per problem at ``params`` (its ``n`` is replaced) and score them.

    Returns one row per problem: ``{key, problem_id, responses: [{text, reward, n_tokens,
    finish_reason}], prompt_tokens}``. With ``log_path`` the rows are appended there and a rerun
    resumes. The chunk seed is ``params.seed + chunk index``.
    """
    items = [{"key": p.id, "problem": p} for p in problems]

    def work(chunk: list[dict], ci: int) -> list[dict]:
        probs = [it["problem"] for it in chunk]
        sp = SamplingParams(**{**params.__dict__, "n": n, "seed": params.seed + ci})
        outs = generator.generate([p.prompt for p in probs], sp)
        prompt_tokens = generator.last_prompt_tokens
        rewards = iter(score([c.text for cs in outs for c in cs],
                             [p.id for p, cs in zip(probs, outs) for _ in cs]))
        rows = []
        for j, (p, comps) in enumerate(zip(probs, outs)):
            rows.append({
                "key": p.id,
                "problem_id": p.id,
                # the chunk's prompt tokens, attributed to its first row (ledger sums them)
                "prompt_tokens": prompt_tokens if j == 0 else 0,
                "responses": [
                    {
                        "text": c.text,
                        "reward": next(rewards),
                        "n_tokens": c.n_tokens,
                        "finish_reason": c.finish_reason,
                    }
                    for c in comps
                ],
            })
        return rows

    if log_path is None:
        rows: list[dict] = []
        for ci in range(0, len(items), chunk_size):
            rows += work(items[ci : ci + chunk_size], ci // chunk_size)
            if progress:
                progress(len(items[ci : ci + chunk_size]))
        return rows
    with ResumableLog(log_path) as log:
        return run_chunked(items, "key", chunk_size, work, log, progress)


def generated_tokens(rows: Iterable[dict], list_field: str) -> int:
    """Prompt + generated tokens recorded in rollout or MC rows (for the compute ledger)."""
    return sum(r["prompt_tokens"] + sum(c["n_tokens"] for c in r[list_field]) for r in rows)


def select_balanced(responses: Sequence[dict], n: int, seed: int = 0) -> list[int]:
    """Indices of ``n`` responses, half correct and half wrong where possible.

    Duplicated texts count once. Takes ceil(n/2) correct and the rest wrong; when one side runs
    short, the other fills the gap. Deterministic for a given ``seed``.
    """
    seen: set[str] = set()
    good, bad = [], []
    for i, r in enumerate(responses):
        if r["text"] in seen:
            continue
        seen.add(r["text"])
        (good if r["reward"] > 0.5 else bad).append(i)
    rng = random.Random(seed)
    rng.shuffle(good)
    rng.shuffle(bad)
    n_good = min(len(good), max(n - len(bad), (n + 1) // 2))
    n_bad = min(len(bad), n - n_good)
    return sorted(good[:n_good] + bad[:n_bad])


# --------------------------------------------------------------------------- MC labels
def mc_label_states(
    generator: Generator,
    states: Sequence[dict],
    m: int,
    score: Score,
    *,
    params: SamplingParams,
    log_path: str | Path,
    chunk_size: int = 16,
    progress: Callable[[int], None] | None = None,
) -> list[dict]:
    """Give each state ``m`` completions from the policy; label = fraction the verifier accepts.

    A state is ``{key, problem_id, prompt, prefix, ...}``; the full response scored is
    ``prefix + completion``. Rows: the state's fields (minus the prompt), ``completions:
    [{text, reward, n_tokens, finish_reason}]``, ``value`` (mean reward) and the chunk's
    ``prompt_tokens``. Append-only at ``log_path``: a rerun after a kill skips finished chunks.
    """

    def work(chunk: list[dict], ci: int) -> list[dict]:
        sp = SamplingParams(**{**params.__dict__, "n": m, "seed": params.seed + ci})
        outs = generator.generate([s["prompt"] + s["prefix"] for s in chunk], sp)
        prompt_tokens = generator.last_prompt_tokens
        rewards = iter(score([s["prefix"] + c.text for s, cs in zip(chunk, outs) for c in cs],
                             [s["problem_id"] for s, cs in zip(chunk, outs) for _ in cs]))
        rows = []
        for j, (s, comps) in enumerate(zip(chunk, outs)):
            completions = [
                {
                    "text": c.text,
                    "reward": next(rewards),
                    "n_tokens": c.n_tokens,
                    "finish_reason": c.finish_reason,
                }
                for c in comps
            ]
            row = {k: v for k, v in s.items() if k != "prompt"}
            row["completions"] = completions
            row["value"] = sum(c["reward"] for c in completions) / max(len(completions), 1)
            row["prompt_tokens"] = prompt_tokens if j == 0 else 0
            rows.append(row)
        return rows

    with ResumableLog(log_path) as log:
        return run_chunked(list(states), "key", chunk_size, work, log, progress)
