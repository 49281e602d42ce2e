"""verl's ``custom_reward_function``: ``compute_score(data_source, solution_str, ground_truth,
extra_info=None)``.

verl's reward managers (``NaiveRewardManager`` and the batch/prime ones) call it once per
response with keyword arguments: ``data_source`` (the row's ``data_source`` column),
``solution_str`` (the decoded response, special tokens skipped), ``ground_truth``
(``row["reward_model"]["ground_truth"]``) and ``extra_info`` (the row's ``extra_info``), plus
any ``custom_reward_function.reward_kwargs``. A dict result is used as: ``score`` is the reward,
and every key becomes a per-response list in ``reward_extra_info``, so every call returns the
same keys:

    {"score": 1.0 | 0.0, "acc": bool, "pred": str, "reason": str, "infra_error": bool}

``reason`` is the verdict's (``ok``, ``wrong_answer``, ``time_limit``, ...); ``pred`` is the
math answer found ('' when none; '' for code). ``infra_error`` is True when the verifier failed
on its own side (a worker or checker died, the sandbox is not isolated): the score is then 0.0
only because verl needs a number; mask such responses (``reward_extra_info["infra_error"]``),
never learn from them.

Which verifier: ``data_source`` is looked up, lower-cased, in ``DATA_SOURCES`` (verl's own names
for its math and code datasets, this project's task names, and plain ``math`` / ``code``); a
``sources={"my_set": "math"}`` reward kwarg adds names; an unknown source is a UserError that
names it. Verifier options come the same way (``math_options={"timeout": 10}``,
``code_options={"workers": 4}``).

Not covered: batched scoring (verl's BatchRewardManager passes lists; use ``compute_score`` per
item or the TRL function, which verifies a batch in parallel); ``finished`` flags (verl does not
pass them: every response counts as finished).
"""

from __future__ import annotations

from typing import Any

from dapo_bench.errors import UserError
from dapo_bench.rewards.core import verify_texts

DATA_SOURCES: dict[str, str] = {
    **dict.fromkeys((
        "math", "openai/gsm8k", "gsm8k", "lighteval/math", "digitallearninggmbh/math-lighteval",
        "huggingfaceh4/math-500", "math500", "math_dapo", "math-dapo", "aime", "aime2024",
        "aime2025", "amc", "numina_aops_forum", "numina_amc_aime", "numina_cn_k12",
        "numina_olympiads", "numina_synthetic_math", "olympiadbench", "minerva_math",
        "college_math", "arith"), "math"),
    **dict.fromkeys((
        "code", "codecontests", "code_contests", "apps", "codeforces", "taco", "livecodebench",
        "humaneval", "mbpp", "leetcode", "primeintellect"), "code"),
}


def verifier_for(data_source: Any, sources: dict[str, str] | None = None) -> str:
    """``math`` or ``code`` for a verl ``data_source`` (see the module docstring)."""
    table = {**DATA_SOURCES, **{str(k).lower(): v for k, v in (sources or {}).items()}}
    name = table.get(str(data_source).lower())
    if name not in ("math", "code"):
        raise UserError(f"compute_score: unknown data_source {data_source!r}: map it with "
                        "custom_reward_function.reward_kwargs.sources={NAME: math|code} "
                        "(known: see dapo_bench.rewards.verl.DATA_SOURCES)")
    return name


def compute_score(data_source: str, solution_str: str, ground_truth: Any,
                  extra_info: dict | None = None, *, sources: dict[str, str] | None = None,
                  math_options: dict | None = None, code_options: dict | None = None,
                  **_: Any) -> dict[str, Any]:
    """Score one response as verl's reward managers call it (see the module docstring)."""
    verifier = verifier_for(data_source, sources)
    options = (math_options if verifier == "math" else code_options) or {}
    (v,) = verify_texts(verifier, [solution_str], [ground_truth], options)
    return {"score": v.reward, "acc": v.passed, "pred": v.extracted or "", "reason": v.reason,
            "infra_error": v.infra_error}
