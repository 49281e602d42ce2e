"""TRL reward functions: ``GRPOTrainer(reward_funcs=[math_reward])``.

TRL (checked against trl 1.16) calls a reward function as
``f(prompts=..., completions=..., completion_ids=..., trainer_state=..., log_extra=...,
log_metric=..., **columns)``, where ``columns`` are the dataset's other columns, one value per
completion, and reads back one float per completion; ``None`` means "no reward from this
function" (TRL turns it into NaN and leaves it out of the group's mean and of the loss).

``math_reward`` reads the gold from the ``answer`` column, ``code_reward`` the tests from
``tests`` (each verifier's ``column``); ``make_math_reward(column="solution", timeout=10)``,
``make_code_reward(column=..., **verifier options)`` and ``make_reward(verifier, ...)`` make
others (``functools.partial(math_reward, column="solution")`` works too). A completion is a
string or, for a conversational dataset, a list of messages; the verifier turns it into its
input (its ``input_from``: math the assistant's text, code its last fenced block, completed by
the tests' ``prompt`` when it holds only a function body). The batch is verified with
``verify_batch`` on a long-lived verifier (worker pools kept between steps).

No silent zero: a missing column, a gold that is no gold (empty, NaN, null; tests that do not
parse), a bare string where the column's list belongs and a chat with no assistant message
raise UserError naming the column and item. A verdict that is an infrastructure error
(``Verdict.infra_error``: a worker or checker died, the sandbox is not isolated) is returned as
``None``, never as 0, and counted in the metric ``dapo_bench/<name>/infra_errors``; each
completion's verdict reason is logged as the column ``<name>_reason`` of TRL's completions
table.

Cut off at ``max_completion_length``: TRL passes each completion's token ids, ending with an
end-of-sequence token when it finished; give the reward those token ids
(``make_math_reward(stop_token_ids=[tokenizer.eos_token_id])``: TRL's own rule for its
``clipped_ratio``) and a completion whose last id is not one of them is graded as cut off
(math: only a marked answer counts). Without them every completion counts as finished.
"""

from __future__ import annotations

from typing import Any

from dapo_bench.errors import UserError
from dapo_bench.rewards.core import column as as_column
from dapo_bench.rewards.core import verify_completions
from dapo_bench.verifiers.base import VERIFIERS

_TRL_KWARGS = ("prompts", "completion_ids", "trainer_state", "log_extra", "log_metric",
               "environments")


class Reward:
    """A TRL reward function for one verifier; ``__name__`` is what TRL logs it under."""

    def __init__(self, verifier: str, column: str | None = None, name: str | None = None,
                 stop_token_ids: Any = None, **options: Any):
        self.verifier, self.options = verifier, options
        self.column = column or VERIFIERS.get(verifier).column
        self.stop_token_ids = None if stop_token_ids is None else frozenset(
            [stop_token_ids] if isinstance(stop_token_ids, int) else stop_token_ids)
        self.__name__ = name or f"{verifier}_reward"

    def __call__(self, completions: list, column: str | None = None, **kwargs: Any
                 ) -> list[float | None]:
        col = column or self.column
        if col not in kwargs:
            known = sorted(k for k in kwargs if k not in _TRL_KWARGS)
            raise UserError(f"{self.__name__}: the dataset has no column {col!r} with the gold "
                            f"(columns: {', '.join(known) or 'none'}); name it with "
                            f"make_reward({self.verifier!r}, column=...)")
        verdicts = verify_completions(self.verifier, completions, kwargs[col],
                                      self._finished(kwargs.get("completion_ids"), completions),
                                      self.options, gold_name=col)
        infra = sum(v.infra_error for v in verdicts)
        if callable(kwargs.get("log_metric")):
            kwargs["log_metric"](f"dapo_bench/{self.__name__}/infra_errors", float(infra))
        if callable(kwargs.get("log_extra")):
            kwargs["log_extra"](f"{self.__name__}_reason", [v.reason for v in verdicts])
        return [None if v.infra_error else v.reward for v in verdicts]

    def _finished(self, completion_ids: Any, completions: Any) -> list[bool] | None:
        """Per completion, whether it ended with a stop token (None: no stop ids given)."""
        if self.stop_token_ids is None:
            return None
        if completion_ids is None:
            raise UserError(f"{self.__name__}: stop_token_ids needs TRL's completion_ids "
                            "(the token ids of each completion), and none were passed")
        ids = as_column(completion_ids, "completion_ids", len(as_column(completions,
                                                                        "completions")))
        return [not len(x) or int(x[-1]) in self.stop_token_ids for x in ids]

    def __repr__(self) -> str:
        return f"<dapo_bench reward {self.__name__}: {self.verifier} verifier, gold column " \
               f"{self.column!r}>"


def make_reward(verifier: str, column: str | None = None, name: str | None = None,
                stop_token_ids: Any = None, **options: Any) -> Reward:
    """A reward of the registered verifier *verifier* reading its gold from *column* (default:
    the verifier's ``column``); *stop_token_ids*: the ids that end a finished completion (the
    module docstring); *options* go to the verifier (see ``dapo-bench verify --help``)."""
    return Reward(verifier, column, name, stop_token_ids, **options)


def make_math_reward(column: str = "answer", name: str = "math_reward",
                     stop_token_ids: Any = None, **options: Any) -> Reward:
    """A math reward reading the gold from *column*; *options* go to the math verifier
    (``timeout``, ``workers``, ``mode``, ``fallback_last_number``)."""
    return Reward("math", column, name, stop_token_ids, **options)


def make_code_reward(column: str = "tests", name: str = "code_reward",
                     stop_token_ids: Any = None, **options: Any) -> Reward:
    """A code reward reading the tests from *column*; *options* go to the code verifier
    (``timeout``, ``workers``, ``limits``)."""
    return Reward("code", column, name, stop_token_ids, **options)


math_reward = make_math_reward()
code_reward = make_code_reward()
