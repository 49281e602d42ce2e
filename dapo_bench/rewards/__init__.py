"""The verifiers in other frameworks' reward signatures. Imports no torch (nor sympy: that runs
in the math verifier's worker processes).

    from dapo_bench.rewards import math_reward, code_reward     # TRL: GRPOTrainer(reward_funcs=...)
    from dapo_bench.rewards import compute_score                 # verl: custom_reward_function

``trl``: ``math_reward``, ``code_reward``, ``make_math_reward``, ``make_code_reward``,
``make_reward`` (TRL's ``(completions, **kwargs) -> list[float | None]``). ``verl``:
``compute_score`` (per item and per batch) and ``DATA_SOURCES``. ``core``: the shared verifiers
and ``verify_completions``. ``dapo-bench serve`` is OpenRLHF's remote reward model, over HTTP.
docs/rewards.md shows each in use. An infrastructure error (``Verdict.infra_error``) is never a
0: TRL gets None, verl a flag; a user's mistake (a gold that is no gold, a chat with no
assistant turn, a bare string for a column) is a UserError, never a 0.
"""

from dapo_bench.rewards.core import close_all, completion_text, shared_verifier, verify_completions
from dapo_bench.rewards.trl import (
    code_reward,
    make_code_reward,
    make_math_reward,
    make_reward,
    math_reward,
)
from dapo_bench.rewards.verl import DATA_SOURCES, compute_score, verifier_for

__all__ = [
    "DATA_SOURCES", "close_all", "code_reward", "completion_text", "compute_score",
    "make_code_reward", "make_math_reward", "make_reward", "math_reward", "shared_verifier",
    "verifier_for", "verify_completions",
]
