"""The one rollout path: sample from a policy, score with the verifier, keep what was generated.

Every method that samples (DAPO's rollouts and Monte Carlo labels, RFT and DPO's data, GRPO and
PPO's online steps) goes through :func:`sample_groups`:

- a :class:`Request` says what to sample from (``context``: the rendered prompt, plus a
  partial response for a Monte Carlo completion) and how a completion is scored (the verifier
  sees ``scored_prefix + completion``, for the problem ``problem_id``);
- requests go to the generator in fixed chunks; chunk ``k`` samples with seed ``params.seed +
  k``, so a chunk's samples depend only on its index (a run killed part-way and rerun through
  a :class:`ResumableLog` regenerates exactly the chunks it lacks and gets the same rows);
- each request gives a :class:`Group` of ``n`` :class:`Rollout` records (text, the verifier's
  :class:`~dapo_bench.verifiers.base.Verdict` and its reward, generated tokens and token ids,
  log-probs where asked), and the chunk's prompt tokens for the compute ledger.

Groups are written to and read from JSONL rows by :meth:`Group.to_row` / :func:`group_from_row`
(one serialisation for every artifact). Also here: :func:`split_steps` / :func:`make_states`
(a response cut at ``\\n`` into steps and prefix states) and :func:`select_balanced`.

Not covered: multi-turn prompts, tool calls, rewards other than a verifier's pass/fail.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dapo_bench.generation.base import Generator, SamplingParams
from dapo_bench.io import JsonlAppender, iter_jsonl
from dapo_bench.verifiers.base import Verdict

# (texts to score, their problem ids) -> one Verdict per text (e.g. methods.data.Scorer), or a
# float reward per text (a dense reward, e.g. in tests)
Score = Callable[[list[str], list[str]], "list[Verdict] | list[float]"]


@dataclass(frozen=True)
class TrainProblem:
    """A training problem: a rendered prompt, the gold answer, optionally a gold solution."""

    id: str
    prompt: str
    gold: str
    solution: str | None = None


@dataclass(frozen=True)
class Request:
    """What to sample from: ``context`` (prompt [+ partial response]); completions are scored
    as ``scored_prefix + completion`` for problem ``problem_id``; ``key`` names the group."""

    key: str
    problem_id: str
    context: str
    scored_prefix: str = ""

    @classmethod
    def for_problem(cls, p: TrainProblem) -> Request:
        return cls(p.id, p.id, p.prompt)


@dataclass
class Rollout:
    """One sampled completion: what was generated, its reward and the verifier's verdict
    (``reward`` is ``verdict.reward``, or a dense reward's value when there is no verdict)."""

    text: str
    reward: float
    verdict: Verdict | None
    n_tokens: int
    finish_reason: str  # "stop" | "length"
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None

    @classmethod
    def scored(cls, score: Verdict | float, **kw: Any) -> Rollout:
        if isinstance(score, Verdict):
            return cls(reward=score.reward, verdict=score, **kw)
        return cls(reward=float(score), verdict=None, **kw)

    @property
    def passed(self) -> bool:
        return self.verdict.passed if self.verdict is not None else self.reward > 0.5

    @property
    def stopped(self) -> bool:
        return self.finish_reason == "stop"

    def to_row(self) -> dict:
        return {"text": self.text, "reward": self.reward, "n_tokens": self.n_tokens,
                "finish_reason": self.finish_reason}


@dataclass
class Group:
    """The ``n`` rollouts of one request, and the prompt tokens charged with them."""

    key: str
    problem_id: str
    rollouts: list[Rollout]
    prompt_tokens: int = 0  # a chunk's prompt tokens, carried by its first group
    extra: dict[str, Any] = field(default_factory=dict)  # fields a stage keeps in the row

    @property
    def texts(self) -> list[str]:
        return [r.text for r in self.rollouts]

    @property
    def rewards(self) -> list[float]:
        return [r.reward for r in self.rollouts]

    @property
    def passed(self) -> list[bool]:
        return [r.passed for r in self.rollouts]

    @property
    def tokens(self) -> int:
        """Prompt + generated tokens (what the compute ledger charges as inference)."""
        return self.prompt_tokens + sum(r.n_tokens for r in self.rollouts)

    def to_row(self, list_field: str = "responses") -> dict:
        return {"key": self.key, "problem_id": self.problem_id,
                "prompt_tokens": self.prompt_tokens,
                list_field: [r.to_row() for r in self.rollouts]}


def group_from_row(row: dict, list_field: str = "responses") -> Group:
    """The :class:`Group` of an artifact row (rewards kept, verdicts not)."""
    rollouts = [Rollout(c["text"], float(c["reward"]), None, c["n_tokens"], c["finish_reason"])
                for c in row[list_field]]
    return Group(row["key"], row["problem_id"], rollouts, row.get("prompt_tokens", 0))


# --------------------------------------------------------------------------- sampling
def sample_chunk(generator: Generator, requests: Sequence[Request], n: int, score: Score,
                 params: SamplingParams) -> list[Group]:
    """One generate call and one score call: ``n`` scored rollouts per request."""
    sp = SamplingParams(**{**params.__dict__, "n": n})
    outs = generator.generate([r.context for r in requests], sp)
    verdicts = iter(score([r.scored_prefix + c.text for r, cs in zip(requests, outs) for c in cs],
                          [r.problem_id for r, cs in zip(requests, outs) for _ in cs]))
    groups = []
    for j, (req, comps) in enumerate(zip(requests, outs)):
        rollouts = [Rollout.scored(next(verdicts), text=c.text, n_tokens=c.n_tokens,
                                   finish_reason=c.finish_reason, token_ids=c.token_ids,
                                   logprobs=c.logprobs) for c in comps]
        # the chunk's prompt tokens, attributed to its first group (the ledger sums them)
        groups.append(Group(req.key, req.problem_id, rollouts,
                            generator.last_prompt_tokens if j == 0 else 0))
    return groups


def sample_groups(
    generator: Generator,
    requests: Sequence[Request],
    n: int,
    score: Score,
    *,
    params: SamplingParams,
    chunk_size: int,
    ledger: Any = None,
    stage: str = "",
    until: Callable[[], bool] | None = None,
    progress: Callable[[int], None] | None = None,
    log: ResumableLog | None = None,
    to_row: Callable[[Request, Group], dict] | None = None,
) -> list[Group]:
    """``n`` scored rollouts per request, in chunks of ``chunk_size`` (seed of chunk k:
    ``params.seed + k``); every group returned is charged to ``ledger`` under ``stage``.

    ``until()`` returning True stops between chunks (a budget); the groups so far are returned.
    With ``log`` finished chunks are read back from it and new ones appended as
    ``to_row(request, group)`` (default ``group.to_row()``), so a rerun resumes.
    """
    out: list[Group] = []
    for k, start in enumerate(range(0, len(requests), chunk_size)):
        if until is not None and until():
            break
        chunk = list(requests[start : start + chunk_size])
        if log is not None and all(r.key in log.done for r in chunk):
            groups = [log.group(r.key) for r in chunk]
        else:
            sp = SamplingParams(**{**params.__dict__, "seed": params.seed + k})
            groups = sample_chunk(generator, chunk, n, score, sp)
            if log is not None:
                for r, g in zip(chunk, groups):
                    log.add(to_row(r, g) if to_row else g.to_row())
        if ledger is not None:
            ledger.add_inf(stage, sum(g.tokens for g in groups))
        out.extend(groups)
        if progress:
            progress(len(chunk))
    return out


class ResumableLog:
    """Append-only JSONL of group rows keyed by ``key``; knows which keys are already done.

    A half-written last line (a kill during a write) is dropped on open.
    """

    def __init__(self, path: str | Path, list_field: str = "responses"):
        self.path = Path(path)
        self.list_field = list_field
        self._app = JsonlAppender(self.path)  # repairs a cut tail first
        self.done: dict[str, dict] = {}
        if self.path.stat().st_size:
            for row in iter_jsonl(self.path):
                self.done[row["key"]] = row

    def add(self, row: dict) -> None:
        if row["key"] not in self.done:
            self._app.write(row)
            self.done[row["key"]] = row

    def group(self, key: str) -> Group:
        return group_from_row(self.done[key], self.list_field)

    def close(self) -> None:
        self._app.close()

    def __enter__(self) -> ResumableLog:  # noqa: PYI034 (typing.Self needs 3.11)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
