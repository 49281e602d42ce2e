"""The verdict type and the verifier registry (the plug-point for new verifiers).

A verifier is registered under a name with a class exposing::

    name: str; version: str
    fields: tuple[str, str]        # default JSONL fields for `dapo-bench verify`: (prediction, gold)
    def __init__(self, **options)  # e.g. timeout, mode; unknown options raise UserError
    def verify(self, prediction, gold) -> Verdict
    def verify_batch(self, predictions, golds, finished=None) -> list[Verdict]  # in order
    def close(self) -> None        # release workers

``finished``: one flag per prediction, False for a response cut off at the token cap (None:
all finished); each verifier decides what that means (math: only a marked answer counts;
code: nothing, the program runs either way).

``Verdict.reason`` vocabulary: "ok" (passed), "wrong_answer", "no_answer", "truncated" (math:
cut off at the cap with no marked answer), "timeout",
"too_large", "parse_error", "sandbox_error", "verifier_error" (math: a sympy worker died), and
the code verifier's per-test statuses ("runtime_error", "time_limit", "memory_limit",
"output_limit", "checker_crashed", ...).

``INFRA_REASONS``: the reasons that are a failure of the verifying machinery itself, not of the
answer (a worker or checker died, the sandbox is not isolated). Such a verdict fails, and
``Verdict.infra_error`` says so: a caller that trains on rewards reports it (TRL: None, verl: a
flag; see dapo_bench.rewards) instead of a 0 that a policy would learn from.

``answer_text``: what a verifier is given of a completion, its answer and not its thinking
(the text after the last ``</think>``); eval, training rewards and dapo_bench.rewards apply it
before a verifier sees the text.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from dapo_bench.registry import Registry

INFRA_REASONS = frozenset({"sandbox_error", "checker_crashed", "verifier_error"})


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str
    extracted: str | None = None  # the extracted answer (math) or None
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)  # e.g. per-test statuses (code)

    @property
    def reward(self) -> float:
        return 1.0 if self.passed else 0.0

    @property
    def infra_error(self) -> bool:
        """The verifier failed on its own side (``INFRA_REASONS``): no verdict on the answer."""
        return self.reason in INFRA_REASONS

    def to_dict(self) -> dict:
        return asdict(self)


class Verifier(Protocol):
    name: str
    version: str
    fields: tuple[str, str]

    def verify(self, prediction: Any, gold: Any) -> Verdict: ...

    def verify_batch(self, predictions: list[Any], golds: list[Any],
                     finished: list[bool] | None = None) -> list[Verdict]: ...

    def close(self) -> None: ...


VERIFIERS: Registry[type] = Registry(
    "verifier",
    modules=["dapo_bench.verifiers.math", "dapo_bench.verifiers.code"],
)


THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def answer_text(text: str) -> str:
    """What a verifier is given of a completion: its answer, never its thinking. Text up to
    the last ``</think>`` is thinking (a template that opens ``<think>`` in the prompt, as
    DeepSeek-R1's does, included) and the answer is what follows it; a completion that opens
    ``<think>`` and never closes it was cut off while thinking and has no answer (""); a
    completion without the tags is read whole. The one rule of eval, training rewards
    (``tasks.Task.prediction``) and ``dapo_bench.rewards``."""
    k = text.rfind(THINK_CLOSE)
    if k >= 0:
        return text[k + len(THINK_CLOSE):]
    return "" if text.lstrip().startswith(THINK_OPEN) else text
