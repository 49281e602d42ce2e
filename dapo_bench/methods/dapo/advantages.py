"""DAPO's step advantages (Liu et al., arXiv 2412.18279), as plain functions.

In state s, the M candidate next steps a_i are the first steps of the state's M completions
(the ``completions`` of its ``rows.McRow``), cut from their generated token ids
(``training.rollouts.StepSplitter``: a step ends with the first token whose text contains
``\n``; nothing is re-tokenised). Each is valued: a step that ends the response (the completion
has no further step and stopped on EOS) by its reward, any other by a value estimator from
:data:`VALUE_ESTIMATORS` (``critic``: the critic's V(s + a_i), the paper's; ``mc``: the mean
reward of the state's completions that begin with a_i; ``critic_mc``: that Monte Carlo mean
shrunk towards the critic, ``(sum of those rewards + k * V(s + a_i)) / (count + k)``). Then
``A(s, a_i) = v_i - mean_j v_j`` (the mean over all M samples, an estimate of V(s)). Duplicate
actions are merged (same ids, same value) into ``rows.Action`` records; a state whose advantage
spread (max - min) is under ``min_spread`` is dropped, since it carries no preference.

Not covered: token-level (rather than step-level) advantages.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from dapo_bench.methods.dapo.rows import Action
from dapo_bench.registry import Registry
from dapo_bench.training.rollouts import Rollout, StepSplitter


@dataclass(frozen=True)
class Candidate:
    """A candidate next step: its token ids (as generated) and text, whether it ends the
    response, its reward if it does, and ``outcome``: the reward of the whole completion it is
    the first step of."""

    ids: tuple[int, ...]
    text: str
    terminal: bool
    reward: float | None = None
    outcome: float | None = field(default=None, compare=False)

    @property
    def key(self) -> tuple[tuple[int, ...], bool]:
        return self.ids, self.terminal


def candidates_from_completions(completions: Sequence[Rollout],
                                splitter: StepSplitter) -> list[Candidate]:
    """First step of each completion (its generated ``token_ids``, ``reward`` and
    ``finish_reason``); a completion with no token is skipped.

    A completion that is a single step and stopped (on EOS or a stop string, not at the length
    cap) ends the response: its step is terminal (its ids include the EOS it generated: stopping
    is part of the action) and carries the completion's reward.
    """
    out = []
    for c in completions:
        if c.token_ids is None:
            raise ValueError(f"completion {c.text!r} has no token ids (token ids are the truth)")
        steps = splitter.split(c.token_ids)
        if not steps:
            continue
        first = steps[0]
        terminal = len(steps) == 1 and not splitter.ends_step(first[-1]) and c.stopped
        out.append(Candidate(tuple(first), splitter.text(first), terminal,
                             float(c.reward) if terminal else None, float(c.reward)))
    return out


ValueEstimator = Callable[[Sequence[Candidate], Sequence["float | None"], float],
                          "list[float | None]"]
VALUE_ESTIMATORS: Registry[ValueEstimator] = Registry("DAPO value estimator")
"""``fn(candidates, critic_values, prior) -> values`` of the non-terminal candidates (None for
terminal ones, which :func:`state_advantages` values by their reward). Entries carry
``needs_critic``: whether stage B must score V(s + a_i) with the critic first."""


@VALUE_ESTIMATORS.register("critic", needs_critic=True,
                           help="the critic's V(s + a_i) (the paper's estimator)")
def critic_values(cands: Sequence[Candidate], critic: Sequence[float | None],
                  prior: float = 0.0) -> list[float | None]:
    return [None if c.terminal else critic[i] for i, c in enumerate(cands)]


def _outcomes_by_step(cands: Sequence[Candidate]) -> dict[tuple, list[float]]:
    groups: dict[tuple, list[float]] = defaultdict(list)
    for c in cands:
        if c.outcome is None:
            raise ValueError(f"candidate {c.text!r} has no outcome (the completion's reward)")
        groups[c.key].append(c.outcome)
    return groups


@VALUE_ESTIMATORS.register("mc", needs_critic=False,
                           help="mean reward of the state's completions that begin with a_i")
def mc_values(cands: Sequence[Candidate], critic: Sequence[float | None] = (),
              prior: float = 0.0) -> list[float | None]:
    g = _outcomes_by_step(cands)
    return [None if c.terminal else sum(g[c.key]) / len(g[c.key]) for c in cands]


@VALUE_ESTIMATORS.register("critic_mc", needs_critic=True,
                           help="the Monte Carlo mean of a_i's completions shrunk towards the "
                                "critic: (sum of rewards + prior * V) / (count + prior)")
def critic_mc_values(cands: Sequence[Candidate], critic: Sequence[float | None],
                     prior: float = 1.0) -> list[float | None]:
    g = _outcomes_by_step(cands)
    out: list[float | None] = []
    for c, v in zip(cands, critic):
        rs = g[c.key]
        out.append(None if c.terminal else (sum(rs) + prior * _known(c, v)) / (len(rs) + prior))
    return out


def _known(c: Candidate, v: float | None) -> float:
    """The value of candidate ``c``: one that is missing is an error, never a silent 0."""
    if v is None:
        raise ValueError(f"candidate {c.text!r} has no value")
    return float(v)


def state_advantages(
    candidates: Sequence[Candidate], values: Sequence[float | None], min_spread: float = 0.1
) -> tuple[Action, ...] | None:
    """Unique actions of a state with their value and advantage, or None if the state is dropped.

    ``values[i]`` is the critic's V(s + a_i) for a non-terminal candidate (ignored for terminal
    ones, which use their reward). Returns the :class:`~rows.Action` records in first-seen order.
    """
    if not candidates:
        return None
    vals = [_known(c, c.reward if c.terminal else v) for c, v in zip(candidates, values)]
    base = sum(vals) / len(vals)
    unique: dict[tuple, Action] = {}
    for c, v in zip(candidates, vals):
        unique.setdefault(c.key, Action(c.ids, c.text, c.terminal, v, v - base))
    acts = tuple(unique.values())
    advs = [a.adv for a in acts]
    if len(acts) < 2 or max(advs) - min(advs) < min_spread:
        return None
    return acts
