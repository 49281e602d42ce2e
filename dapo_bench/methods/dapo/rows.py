"""DAPO's artifact rows: one small frozen dataclass per kind of row, each with one reader
(``from_row``, a parsed JSON object in) and one writer (``to_row``, the object ``json.dumps``
writes), as :class:`training.rollouts.Group` is for ``rollouts.jsonl``.

- :class:`State`: a ``states.jsonl`` row, a prefix state of one kept rollout;
- :class:`McRow`: an ``mc.jsonl`` row, a state's Monte Carlo completions and its value;
- :class:`CriticExample`: one labelled state of the critic's data (in memory only);
- :class:`Action`, :class:`AdvantageRow`: an ``advantages.jsonl`` row, a kept state and its
  unique candidate actions with their values and advantages;
- :class:`RefLogprobs`: ``ref_logprobs.json``, the cached log pi_ref of every kept action.

The files are the ones earlier runs wrote: the same keys in the same order, so a resumed run
reads yesterday's files and a rerun writes them byte for byte (``to_row(from_row(row)) ==
row``, and ``json.dumps`` of both is the same text). Token ids are tuples here, lists on disk.

Not covered: the rows of other methods (``rollouts.jsonl`` is ``Group``'s).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dapo_bench.training.rollouts import Group, Rollout

Ids = tuple[int, ...]


@dataclass(frozen=True)
class _Prefixed:
    """What a state row and an advantages row both begin with: the state's key, its problem,
    the prompt (text and ids) and the prefix of steps (text and ids), in that order on disk."""

    key: str
    problem_id: str
    prompt: str
    prompt_ids: Ids
    prefix: str
    prefix_ids: Ids

    @property
    def context(self) -> list[int]:
        """The state's ids: prompt + prefix."""
        return list(self.prompt_ids) + list(self.prefix_ids)

    @staticmethod
    def _head(row: dict) -> tuple[str, str, str, Ids, str, Ids]:
        return (row["key"], row["problem_id"], row["prompt"], tuple(row["prompt_ids"]),
                row["prefix"], tuple(row["prefix_ids"]))

    def _head_row(self) -> dict:
        return {"key": self.key, "problem_id": self.problem_id, "prompt": self.prompt,
                "prompt_ids": list(self.prompt_ids), "prefix": self.prefix,
                "prefix_ids": list(self.prefix_ids)}


@dataclass(frozen=True)
class State(_Prefixed):
    """A ``states.jsonl`` row: state s_t of problem ``problem_id``, the prompt (text and ids) and
    the steps a_0..a_{t-1} of one kept rollout (``prefix``, ``prefix_ids``), as generated.
    ``key`` (``stages.state_key``) names it in every later artifact."""

    t: int

    @property
    def ids(self) -> list[int]:
        """The state's context: prompt + prefix ids."""
        return self.context

    @classmethod
    def from_row(cls, row: dict) -> State:
        return cls(*cls._head(row), row["t"])

    def to_row(self) -> dict:
        return {**self._head_row(), "t": self.t}


@dataclass(frozen=True)
class McRow:
    """An ``mc.jsonl`` row: a state (its prompt left out: ``states.jsonl`` has it), its
    ``mc_samples`` completions as generated and scored, its Monte Carlo ``value`` (the mean
    reward of the completions; None when the verifier failed on every one: no label) and the
    prompt tokens charged with them. ``infra_errors``: the completions masked because the
    verifier failed on them, kept as written (with their ``reason``), never read as data."""

    key: str
    problem_id: str
    prefix: str
    prefix_ids: Ids
    t: int
    completions: tuple[Rollout, ...]
    value: float | None
    prompt_tokens: int
    infra_errors: tuple[dict, ...] = ()

    @classmethod
    def of(cls, state: State, group: Group) -> McRow:
        """The row of ``state``'s sampled ``group``: the label is the mean over the completions
        the verifier judged (``Group.infra`` masked)."""
        comps = tuple(group.rollouts)
        value = sum(c.reward for c in comps) / len(comps) if comps else None
        infra = group.to_row("completions").get("infra_errors", []) if group.infra else []
        return cls(state.key, state.problem_id, state.prefix, state.prefix_ids, state.t, comps,
                   value, group.prompt_tokens, tuple(infra))

    @classmethod
    def from_row(cls, row: dict) -> McRow:
        return cls(row["key"], row["problem_id"], row["prefix"], tuple(row["prefix_ids"]),
                   row["t"], tuple(Rollout.from_row(c) for c in row["completions"]),
                   row["value"], row["prompt_tokens"], tuple(row.get("infra_errors", ())))

    def to_row(self) -> dict:
        return {"key": self.key, "problem_id": self.problem_id, "prefix": self.prefix,
                "prefix_ids": list(self.prefix_ids), "t": self.t,
                "completions": [c.to_row() for c in self.completions], "value": self.value,
                "prompt_tokens": self.prompt_tokens,
                # only then: rows without infrastructure errors stay as they were
                **({"infra_errors": list(self.infra_errors)} if self.infra_errors else {})}


@dataclass(frozen=True)
class CriticExample:
    """One labelled state of the critic's data (``critic.critic_examples``): its token ids, its
    label, its problem (held-out problems are split off by it), and ``mc_state``: True for an
    MC-labelled state of ``mc.jsonl`` (an m-sample label, what the calibration report scores),
    False for a state + first step with its one completion's reward (``step_labels``)."""

    ids: Ids
    label: float
    problem_id: str
    mc_state: bool


@dataclass(frozen=True)
class Action:
    """A kept candidate next step of a state: its ids as generated (a terminal one ends with its
    EOS), its text, whether it ends the response (``eos``), its value v_i and its advantage
    ``adv`` = v_i - mean_j v_j."""

    ids: Ids
    text: str
    eos: bool
    value: float
    adv: float

    @classmethod
    def from_row(cls, row: dict) -> Action:
        return cls(tuple(row["ids"]), row["text"], row["eos"], row["value"], row["adv"])

    def to_row(self) -> dict:
        return {"ids": list(self.ids), "text": self.text, "eos": self.eos, "value": self.value,
                "adv": self.adv}


@dataclass(frozen=True)
class AdvantageRow(_Prefixed):
    """An ``advantages.jsonl`` row: a state kept by the advantage filter and its unique
    actions, in first-seen order (what the actor trains on)."""

    actions: tuple[Action, ...]

    @classmethod
    def from_row(cls, row: dict) -> AdvantageRow:
        return cls(*cls._head(row), tuple(Action.from_row(a) for a in row["actions"]))

    def to_row(self) -> dict:
        return {**self._head_row(), "actions": [a.to_row() for a in self.actions]}


@dataclass(frozen=True)
class RefLogprobs:
    """``ref_logprobs.json``: log pi_ref(a|s) of every action of every kept state (per state,
    per action, in ``advantages.jsonl`` order), the tokens scoring them took, and what they
    belong to (the advantages file's hash, the policy's, the actor's max_length): a cache of
    other inputs is recomputed, not reused."""

    keys: tuple[str, ...]
    logprobs: tuple[tuple[float, ...], ...]
    tokens: int
    belongs_to: dict[str, Any]

    @classmethod
    def from_row(cls, row: dict) -> RefLogprobs:
        # a cache written before ``belongs_to`` existed belongs to nothing: it is recomputed
        return cls(tuple(row["keys"]), tuple(tuple(x) for x in row["logprobs"]), row["tokens"],
                   row.get("belongs_to", {}))

    def to_row(self) -> dict:
        return {"keys": list(self.keys), "logprobs": [list(x) for x in self.logprobs],
                "tokens": self.tokens, "belongs_to": self.belongs_to}
