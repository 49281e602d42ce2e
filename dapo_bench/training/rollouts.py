"""The one rollout path: sample from a policy, score with the verifier, keep what was generated.

Every method that samples (DAPO's rollouts and Monte Carlo labels, RFT and DPO's data, GRPO and
PPO's online steps) goes through :func:`sample_groups`:

- a :class:`Request` says what to sample from (``context``: the prompt's token ids, plus a
  partial response's ids for a Monte Carlo completion) and how a completion is scored (the
  verifier sees ``scored_prefix + completion``, for the problem ``problem_id``);
- requests go to the generator in fixed chunks; chunk ``k`` samples with seed ``params.seed +
  k``, so a chunk's samples depend only on its index (a run killed part-way and rerun through
  a :class:`ResumableLog` regenerates exactly the chunks it lacks and gets the same rows);
- each request gives a :class:`Group` of ``n`` :class:`Rollout` records (text, the verifier's
  :class:`~dapo_bench.verifiers.base.Verdict` and its reward, the generated token ids, log-probs
  where asked), and the chunk's prompt tokens for the compute ledger.

An infrastructure error is no reward: a rollout whose verdict is ``Verdict.infra_error`` (the
sandbox or a verifier worker died, not the answer's fault) is taken out of its group's
``rollouts`` (so no loss, advantage, label or pair sees it) and kept in ``Group.infra``: its
tokens stay charged, artifacts keep it (``infra_errors`` in the row) and stages count it
(:func:`infra_errors`).

Token ids are the truth: a rollout keeps the ids the model generated (EOS included when it
stopped on EOS), and everything downstream (steps, states, actions, log-probs, the critic's
inputs) is cut from those ids, never from re-tokenised text. :class:`StepSplitter` cuts ids into
steps: a step ends with the first token whose text contains the separator (``\\n``), so a
byte-level BPE token such as ``.\\n\\n`` ends a step whole.

Groups are written to and read from JSONL rows by :meth:`Group.to_row` / :func:`group_from_row`,
their rollouts by :meth:`Rollout.to_row` / :meth:`Rollout.from_row` (one serialisation for every
artifact; logs resume through ``training.resumable``). A reward read back without its verdict
passes above :data:`PASS_THRESHOLD`. Several ranks share a stage's chunks (``shard=True``, see
:func:`sample_groups`). Also here: :func:`split_steps` (the text view of the same rule),
:func:`make_states` and :func:`select_balanced`.

Not covered: multi-turn prompts, tool calls, rewards other than a verifier's pass/fail.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from dapo_bench import dist, telemetry
from dapo_bench.generation.base import Generator, Prompt, SamplingParams
from dapo_bench.training.resumable import ResumableLog
from dapo_bench.training.scope import Scope
from dapo_bench.verifiers.base import Verdict


class Score(Protocol):
    """How sampling gets a reward: called with the texts to score, their problem ids and
    whether each ended by itself (False: cut at the token cap), it returns one ``Verdict`` per
    text (``methods.scorer.Scorer``: the training task's ``Task.score`` through its verifier), or
    a float reward per text (a dense reward, e.g. in tests). A rollout's ``reward`` is
    ``verdict.reward`` (:meth:`Rollout.scored`); the losses read ``Group.rewards``."""

    def __call__(self, texts: list[str], problem_ids: list[str],
                 finished: list[bool]) -> list[Verdict] | list[float]: ...


@dataclass(frozen=True)
class TrainProblem:
    """A training problem: a rendered prompt and its token ids (tokenised once, by
    ``models.encode_prompt``), the gold answer, optionally a gold solution."""

    id: str
    prompt: str
    gold: str
    solution: str | None = None
    prompt_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Request:
    """What to sample from: ``context`` (prompt [+ partial response] ids, or text); completions
    are scored as ``scored_prefix + completion`` for ``problem_id``; ``key`` names the group."""

    key: str
    problem_id: str
    context: Prompt
    scored_prefix: str = ""

    @classmethod
    def for_problem(cls, p: TrainProblem) -> Request:
        return cls(p.id, p.id, list(p.prompt_ids) if p.prompt_ids else p.prompt)


# a reward above it counts as a pass where no verdict says (a row read back, a dense reward)
PASS_THRESHOLD = 0.5


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
        return self.verdict.passed if self.verdict is not None else self.reward > PASS_THRESHOLD

    @property
    def infra(self) -> bool:
        """The verifier failed on its own side: no reward at all (masked, never a 0)."""
        return self.verdict is not None and self.verdict.infra_error

    @property
    def stopped(self) -> bool:
        return self.finish_reason == "stop"

    def to_row(self) -> dict:
        return {"text": self.text, "reward": self.reward, "n_tokens": self.n_tokens,
                "finish_reason": self.finish_reason, "token_ids": self.token_ids}

    @classmethod
    def from_row(cls, c: dict) -> Rollout:
        """The rollout of a row :meth:`to_row` wrote (its reward kept, its verdict not)."""
        return cls(c["text"], float(c["reward"]), None, c["n_tokens"], c["finish_reason"],
                   c.get("token_ids"))


@dataclass
class Group:
    """The ``n`` rollouts of one request, and the prompt tokens charged with them."""

    key: str
    problem_id: str
    rollouts: list[Rollout]
    prompt_tokens: int = 0  # a chunk's prompt tokens, carried by its first group
    extra: dict[str, Any] = field(default_factory=dict)  # fields a stage keeps in the row
    infra: list[Rollout] = field(default_factory=list)  # masked: the verifier failed on them

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
        return self.prompt_tokens + sum(r.n_tokens for r in self.rollouts + self.infra)

    def to_row(self, list_field: str = "responses") -> dict:
        row = {"key": self.key, "problem_id": self.problem_id,
               "prompt_tokens": self.prompt_tokens,
               list_field: [r.to_row() for r in self.rollouts]}
        if self.infra:  # only then: rows without infrastructure errors stay as they were
            row["infra_errors"] = [{**r.to_row(), "reason": r.verdict.reason if r.verdict
                                    else "infra"} for r in self.infra]
        return row


def group_from_row(row: dict, list_field: str = "responses") -> Group:
    """The :class:`Group` of an artifact row (rewards kept, verdicts not)."""
    return Group(row["key"], row["problem_id"], [Rollout.from_row(c) for c in row[list_field]],
                 row.get("prompt_tokens", 0),
                 infra=[Rollout.from_row(c) for c in row.get("infra_errors", ())])


def infra_errors(groups: Sequence[Group]) -> int:
    """Rollouts masked because the verifier failed on them (see the module doc)."""
    return sum(len(g.infra) for g in groups)


# --------------------------------------------------------------------------- sampling
def sample_chunk(generator: Generator, requests: Sequence[Request], n: int, score: Score,
                 params: SamplingParams) -> list[Group]:
    """One generate call and one score call: ``n`` scored rollouts per request."""
    sp = SamplingParams(**{**params.__dict__, "n": n})
    outs = generator.generate([r.context for r in requests], sp)
    scores: Sequence[Verdict | float] = score(
        [r.scored_prefix + c.text for r, cs in zip(requests, outs) for c in cs],
        [r.problem_id for r, cs in zip(requests, outs) for _ in cs],
        [c.finish_reason == "stop" for cs in outs for c in cs])
    verdicts = iter(scores)
    groups = []
    if any(c.token_ids is None for cs in outs for c in cs):
        raise RuntimeError(f"{generator.backend} backend returned no token ids: rollouts need the "
                           f"generated ids (token ids are the truth)")
    for j, (req, comps) in enumerate(zip(requests, outs)):
        rollouts = [Rollout.scored(next(verdicts), text=c.text, n_tokens=c.n_tokens,
                                   finish_reason=c.finish_reason, token_ids=c.token_ids,
                                   logprobs=c.logprobs) for c in comps]
        # the chunk's prompt tokens, attributed to its first group (the ledger sums them)
        groups.append(Group(req.key, req.problem_id, [r for r in rollouts if not r.infra],
                            generator.last_prompt_tokens if j == 0 else 0,
                            infra=[r for r in rollouts if r.infra]))
    return groups


def sample_groups(
    generator: Generator,
    requests: Sequence[Request],
    n: int,
    score: Score,
    *,
    params: SamplingParams,
    chunk_size: int,
    scope: Scope = Scope(),
    until: Callable[[], bool] | None = None,
    log: ResumableLog | None = None,
    to_row: Callable[[Request, Group], dict] | None = None,
    shard: bool = False,
    stats: dict | None = None,
) -> list[Group]:
    """``n`` scored rollouts per request, in chunks of ``chunk_size`` (seed of chunk k:
    ``params.seed + k``); every group returned is charged to ``scope`` (the stage's ledger).

    ``until()`` returning True stops between chunks (a budget); the groups so far are returned.
    With ``log`` finished chunks are read back from it and new ones appended as
    ``to_row(request, group)`` (default ``group.to_row()``), so a rerun resumes.
    The scope's progress bar (``scope.advance(k, resumed=False)``) is told the requests done by
    each chunk, those read back from the log with ``resumed=True`` (so a resumed stage's rate counts only new work).

    ``shard`` (several ranks): each chunk is generated by one rank. Without ``until`` a rank
    makes chunk ``rank`` and then the next chunk no rank has taken (``dist.WorkQueue``), so no
    rank idles while another still has chunks to make, and the tokens are summed over ranks at
    the end; with ``until`` (a budget) the ranks go in rounds, rank r making chunk r of each,
    and sum the tokens of every round, so ``until`` sees one ledger. Every rank keeps the same
    ledger; at the end every rank gets all groups in request order and the log is merged
    (``ResumableLog.merge``). The merged
    rows equal one process's, because a chunk's samples depend only on its index. ``stats``
    (a dict) receives the chunk count, the chunks each rank generated and those read back from
    the log (a resumed run shows what it did not redo). Under ``--report-to`` the reward mean
    and std of the groups returned are reported as ``<stage>/reward_mean|std`` (with
    ``shard``, or in one process: where every group is at hand).
    """
    chunks = [list(requests[i : i + chunk_size]) for i in range(0, len(requests), chunk_size)]
    world = dist.world_size() if shard else 1
    mine: dict[int, list[Group]] = {}
    generated = resumed = 0
    lockstep = world > 1 and until is not None  # a budget must be checked on one ledger
    queue = dist.WorkQueue(len(chunks)) if world > 1 and not lockstep else None
    # free-running ranks take the next free chunk; in lockstep rank r makes chunk r of a round
    order = iter(queue) if queue is not None else (
        start + (dist.rank() if world > 1 else 0) for start in range(0, len(chunks), world))
    pending = 0  # tokens not yet charged (free-running ranks charge them at the end)
    seen = {"done": 0, "old": 0}  # free-running: the stage's counts over every rank so far
    for k in order:
        if until is not None and until():
            break
        tokens, done, old = 0, 0, 0  # old: requests read back from the log
        if k < len(chunks):
            logged = log is not None and all(r.key in log.done for r in chunks[k])
            mine[k] = _chunk(generator, chunks[k], k, n, score, params, log, to_row)
            tokens = sum(g.tokens for g in mine[k])
            done, old = (0, len(chunks[k])) if logged else (len(chunks[k]), 0)
            resumed, generated = resumed + logged, generated + (not logged)
        if lockstep:
            tokens, done, old = (int(x) for x in dist.all_sum([tokens, done, old]))
        if queue is not None:  # progress: the stage's counts over every rank
            pending += tokens
            done, old = _moved(queue, seen, "done", done), _moved(queue, seen, "old", old)
        else:
            scope.charge_inf(tokens)
        if old:
            scope.advance(old, resumed=True)
        if done:
            scope.advance(done)
    if world > 1 and not lockstep:
        scope.charge_ranks(pending)
    if stats is not None:
        per_rank = dist.all_gather(generated) if world > 1 else [generated]
        stats.update(chunks=len(chunks), generated_by_rank=per_rank,
                     resumed=int(dist.all_sum([resumed])[0]) if world > 1 else resumed)
    if world > 1:
        mine = {k: g for part in dist.all_gather(mine) for k, g in part.items()}
    if log is not None:
        log.merge([r.key for r in requests])
    groups = [g for k in sorted(mine) for g in mine[k]]
    if scope.stage and telemetry.active() and (shard or dist.world_size() == 1):  # all groups here
        rewards = [x for g in groups for x in g.rewards]
        telemetry.scalars(scope.stage, telemetry.reward_stats(
            len(rewards), sum(rewards), sum(x * x for x in rewards)))
    return groups


def _moved(queue: dist.WorkQueue, seen: dict[str, int], kind: str, items: int) -> int:
    """How far the stage's ``kind`` count over every rank moved since this rank last looked,
    once its own ``items`` are added (0 when it has none to add)."""
    if not items:
        return 0
    total = queue.done(items, kind)
    moved, seen[kind] = total - seen[kind], total
    return moved


def _chunk(generator, chunk, k, n, score, params, log, to_row) -> list[Group]:
    """Chunk ``k``'s groups: read back from ``log`` when all its rows are there, else sampled
    with seed ``params.seed + k`` (and logged)."""
    if log is not None and all(r.key in log.done for r in chunk):
        return [group_from_row(log.done[r.key], log.list_field) for r in chunk]
    sp = SamplingParams(**{**params.__dict__, "seed": params.seed + k})
    groups = sample_chunk(generator, chunk, n, score, sp)
    if log is not None:
        for r, g in zip(chunk, groups):
            log.add(to_row(r, g) if to_row else g.to_row())
    return groups


# --------------------------------------------------------------------------- steps and states
class StepSplitter:
    """Cuts token ids into steps at token boundaries: a step ends with the first token whose
    text contains ``sep``; the unterminated tail is the last step. Concatenating the steps gives
    the ids back. Per-token texts are decoded once and cached."""

    def __init__(self, tokenizer: Any, sep: str = "\n"):
        self.tokenizer = tokenizer
        self.sep = sep
        self._ends: dict[int, bool] = {}

    def ends_step(self, token: int) -> bool:
        hit = self._ends.get(token)
        if hit is None:
            hit = self._ends[token] = self.sep in self.tokenizer.decode([token])
        return hit

    def split(self, ids: Sequence[int]) -> list[list[int]]:
        steps, cur = [], []
        for t in ids:
            cur.append(int(t))
            if self.ends_step(t):
                steps.append(cur)
                cur = []
        if cur:
            steps.append(cur)
        return steps

    def text(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)


def make_states(steps: Sequence[Sequence[int]]) -> list[dict]:
    """Prefix states s_0..s_{T-1} of a response cut into T steps (of ids): ``prefix_ids`` = the
    steps before t (s_0: empty); the step taken in s_t is ``steps[t]``."""
    out: list[dict] = []
    prefix: list[int] = []
    for t, step in enumerate(steps):
        out.append({"t": t, "prefix_ids": list(prefix), "action_ids": list(step),
                    "n_steps": len(steps)})
        prefix += step
    return out


def split_steps(response: str) -> list[str]:
    """The text view of the step rule: pieces ending at each ``\\n`` (kept), plus the tail
    (for reading and tests; training cuts ids with :class:`StepSplitter`).

    ``"".join(split_steps(r)) == r``; an empty response has no steps.
    """
    steps = [s + "\n" for s in response.split("\n")]
    steps[-1] = steps[-1][:-1]
    return [s for s in steps if s]


def select_balanced(responses: Sequence[Rollout], n: int, seed: int = 0) -> list[int]:
    """Indices of ``n`` responses, half passed (:attr:`Rollout.passed`) and half not where
    possible.

    Duplicated texts count once. Takes ceil(n/2) correct and the rest wrong; when one side runs
    short, the other fills the gap. Deterministic for a given ``seed``.
    """
    seen: set[str] = set()
    good: list[int] = []
    bad: list[int] = []
    for i, r in enumerate(responses):
        if r.text in seen:
            continue
        seen.add(r.text)
        (good if r.passed else bad).append(i)
    rng = random.Random(seed)
    rng.shuffle(good)
    rng.shuffle(bad)
    n_good = min(len(good), max(n - len(bad), (n + 1) // 2))
    n_bad = min(len(bad), n - n_good)
    return sorted(good[:n_good] + bad[:n_bad])
