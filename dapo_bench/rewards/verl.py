"""verl's custom reward function: ``compute_score``, for every reward manager verl ships that
calls one (checked against verl 0.9.1; docs/rewards.md has the config and a table of managers).

Per item (verl's ``naive``, ``dapo``, ``gdpo``, ``rate_limited`` and ``remote`` managers), with
keyword arguments: ``data_source`` (the row's ``data_source`` column), ``solution_str`` (the
decoded response, special tokens skipped), ``ground_truth`` (``row["reward_model"]
["ground_truth"]``) and ``extra_info`` (the row's ``extra_info``), plus the config's
``custom_reward_function.reward_kwargs``. It returns a dict whose ``score`` is the reward and
whose every key verl keeps per response in ``reward_extra_info``, so every call returns the same
keys:

    {"score": 1.0 | 0.0, "acc": bool, "pred": str, "reason": str, "infra_error": bool}

Per batch (verl's ``BatchRewardManager``, legacy): the same function called with
``data_sources``, ``solution_strs``, ``ground_truths`` and ``extra_infos`` returns one such dict
per item, the batch verified in parallel (one ``verify_batch`` per verifier).

``reason`` is the verdict's (``ok``, ``wrong_answer``, ``time_limit``, ...); ``pred`` is the
math answer found ('' when none; '' for code). ``infra_error`` is True when the verifier failed
on its own side (a worker or checker died, the sandbox is not isolated): the score is then 0.0
only because verl needs a number; mask such responses (``reward_extra_info["infra_error"]``),
never learn from them.

Which verifier: ``data_source`` is looked up, lower-cased, in ``DATA_SOURCES`` (verl's own names
for its math and code datasets, this project's task names, and the verifiers' own names); a
``sources={"my_set": "math"}`` reward kwarg adds names; an unknown source is a UserError that
names it. Verifier options come as ``<verifier>_options`` (``math_options={"timeout": 10}``,
``code_options={"workers": 4}``). A gold that is no gold (empty, NaN, tests that do not parse) is
a UserError too: verl's naive, dapo and gdpo managers stop on it, never train on a 0.

Not covered: verl 0.9.1 tells a reward function nothing about whether a response was cut off at
the length limit (its managers pass no finish reason): every response counts as finished.
"""

from __future__ import annotations

from typing import Any

from dapo_bench.errors import UserError
from dapo_bench.rewards.core import column, verify_completions
from dapo_bench.verifiers.base import VERIFIERS

# data, not a branch: which registered verifier grades the rows of a data source
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
    """The registered verifier for a verl ``data_source`` (see the module docstring)."""
    table = {**DATA_SOURCES, **{str(k).lower(): v for k, v in (sources or {}).items()}}
    name = table.get(str(data_source).lower())
    if name is None or name not in VERIFIERS:
        known = " | ".join(VERIFIERS.names())
        what = "unknown data_source" if name is None else f"data_source mapped to {name!r}, " \
                                                          "not a verifier:"
        raise UserError(f"compute_score: {what} {data_source!r}: map it with "
                        f"custom_reward_function.reward_kwargs.sources={{NAME: {known}}} "
                        "(known: see dapo_bench.rewards.verl.DATA_SOURCES)")
    return name


def _row(v) -> dict[str, Any]:
    return {"score": v.reward, "acc": v.passed, "pred": v.extracted or "", "reason": v.reason,
            "infra_error": v.infra_error}


def compute_score(data_source: Any = None, solution_str: Any = None, ground_truth: Any = None,
                  extra_info: dict | None = None, *, sources: dict[str, str] | None = None,
                  data_sources: Any = None, solution_strs: Any = None,
                  ground_truths: Any = None, extra_infos: Any = None,
                  **kwargs: Any) -> dict[str, Any] | list[dict[str, Any]]:
    """Score one response as verl's per-item managers call it, or a batch as its
    BatchRewardManager does (``data_sources=...``: a list of dicts); see the module
    docstring. ``kwargs``: ``<verifier>_options``, and what verl adds (ignored)."""
    if solution_strs is not None or data_sources is not None:
        return _batch(data_sources, solution_strs, ground_truths, sources, kwargs)
    if solution_str is None or data_source is None:
        raise UserError("compute_score: needs data_source, solution_str and ground_truth (one "
                        "response), or data_sources, solution_strs and ground_truths (a batch)")
    verifier = verifier_for(data_source, sources)
    VERIFIERS.get(verifier).check_gold(
        ground_truth, f"compute_score: ground_truth (the row's reward_model.ground_truth, "
                      f"data_source {data_source!r})")
    (v,) = verify_completions(verifier, [solution_str], [ground_truth],
                              options=kwargs.get(f"{verifier}_options"),
                              gold_name="ground_truth", where="solution_str")
    return _row(v)


def _batch(data_sources: Any, solution_strs: Any, ground_truths: Any,
           sources: dict | None, kwargs: dict) -> list[dict[str, Any]]:
    texts = column(solution_strs, "solution_strs")
    golds = column(ground_truths, "ground_truths", len(texts))
    names = [verifier_for(s, sources) for s in column(data_sources, "data_sources", len(texts))]
    for i, (name, gold) in enumerate(zip(names, golds)):  # named by their place in the batch
        VERIFIERS.get(name).check_gold(gold, f"ground_truths[{i}]")
    out: dict[int, dict[str, Any]] = {}  # place -> row; each place is in one verifier's idx
    for name in dict.fromkeys(names):
        idx = [i for i, n in enumerate(names) if n == name]
        verdicts = verify_completions(name, [texts[i] for i in idx], [golds[i] for i in idx],
                                      options=kwargs.get(f"{name}_options"),
                                      gold_name="ground_truths", where="solution_strs")
        for i, v in zip(idx, verdicts):
            out[i] = _row(v)
    return [out[i] for i in range(len(texts))]
