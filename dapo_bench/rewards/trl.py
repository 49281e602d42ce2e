"""TRL reward functions: ``GRPOTrainer(reward_funcs=[math_reward])``.

TRL (checked against trl 1.16) calls a reward function as
``f(prompts=..., completions=..., completion_ids=..., trainer_state=..., log_extra=...,
log_metric=..., **columns)``, where ``columns`` are the dataset's other columns, one value per
completion, and reads back one float per completion; ``None`` means "no reward from this
function" (TRL turns it into NaN and leaves it out of the group's mean and of the loss).

``math_reward`` reads the gold from the ``answer`` column, ``code_reward`` the tests from
``tests``; ``make_math_reward(column="solution", timeout=10)`` and
``make_code_reward(column=..., **verifier options)`` make others (``functools.partial(
math_reward, column="solution")`` works too). A completion is a string or, for a
conversational dataset, a list of messages (the assistant's content is verified). The batch is
verified with ``verify_batch`` on a long-lived verifier (worker pools kept between steps).

A verdict that is an infrastructure error (``Verdict.infra_error``: a worker or checker died,
the sandbox is not isolated) is returned as ``None``, never as 0, and counted in the metric
``dapo_bench/<name>/infra_errors``; each completion's verdict reason is logged as the column
``<name>_reason`` of TRL's completions table.

Not covered: TRL does not tell a reward function whether a completion was cut off at
``max_completion_length``, so the math verifier treats every completion as finished (use
``GRPOConfig(mask_truncated_completions=True)`` to keep truncated ones out of the loss).
"""

from __future__ import annotations

from typing import Any

from dapo_bench.errors import UserError
from dapo_bench.rewards.core import completion_text, verify_texts


class Reward:
    """A TRL reward function for one verifier; ``__name__`` is what TRL logs it under."""

    def __init__(self, verifier: str, column: str, name: str | None = None, **options: Any):
        self.verifier, self.column, self.options = verifier, column, options
        self.__name__ = name or f"{verifier}_reward"

    def __call__(self, completions: list, column: str | None = None, **kwargs: Any
                 ) -> list[float | None]:
        col = column or self.column
        if col not in kwargs:
            known = sorted(k for k in kwargs if k not in _TRL_KWARGS)
            raise UserError(f"{self.__name__}: the dataset has no column {col!r} with the gold "
                            f"(columns: {', '.join(known) or 'none'}); name it with "
                            f"make_{self.verifier}_reward(column=...)")
        golds = kwargs[col]
        texts = [completion_text(c, f"completions[{i}]") for i, c in enumerate(completions)]
        verdicts = verify_texts(self.verifier, texts, golds, self.options)
        infra = sum(v.infra_error for v in verdicts)
        if callable(kwargs.get("log_metric")):
            kwargs["log_metric"](f"dapo_bench/{self.__name__}/infra_errors", float(infra))
        if callable(kwargs.get("log_extra")):
            kwargs["log_extra"](f"{self.__name__}_reason", [v.reason for v in verdicts])
        return [None if v.infra_error else v.reward for v in verdicts]

    def __repr__(self) -> str:
        return f"<dapo_bench reward {self.__name__}: {self.verifier} verifier, gold column " \
               f"{self.column!r}>"


_TRL_KWARGS = ("prompts", "completion_ids", "trainer_state", "log_extra", "log_metric",
               "environments")


def make_math_reward(column: str = "answer", name: str = "math_reward", **options: Any
                     ) -> Reward:
    """A math reward reading the gold from *column*; *options* go to the math verifier
    (``timeout``, ``workers``, ``mode``, ``fallback_last_number``)."""
    return Reward("math", column, name, **options)


def make_code_reward(column: str = "tests", name: str = "code_reward", **options: Any
                     ) -> Reward:
    """A code reward reading the tests from *column*; *options* go to the code verifier
    (``timeout``, ``workers``, ``limits``)."""
    return Reward("code", column, name, **options)


math_reward = make_math_reward()
code_reward = make_code_reward()
