"""Majority-vote keys: equal keys for simply equivalent answers, without sympy."""

from __future__ import annotations

from dapo_bench.verifiers.math.check import prepare
from dapo_bench.verifiers.math.normalize import TooLarge, parse_number
from dapo_bench.verifiers.math.structure import Node


def normalize_answer(ans: str) -> str:
    """A canonical key for majority voting: equal keys for simple equivalent answers
    (``\\frac12``, ``0.5``, ``1/2`` -> ``1/2``; ``50\\%`` -> ``50``; sets sorted; ``x=3`` ->
    ``3``). No sympy, bounded by the size limits; expressions keep their cleaned spelling."""
    if not isinstance(ans, str):
        ans = "" if ans is None else str(ans)
    try:
        return _key(prepare(ans))
    except TooLarge:
        return ans.strip()[:200]


def _key(n: Node) -> str:
    if n.kind == "leaf":
        num = parse_number(n.text)
        if num is not None:
            return str(num.value)
        return n.text.lower() if n.text.isalpha() and len(n.text) >= 4 else n.text
    if n.kind == "eq" or (n.kind == "eqn" and n.var in ("chain", "named")):
        return _key(n.items[-1])
    if n.kind in ("eqn", "rel"):
        return n.src
    if n.kind == "choice":
        return n.text
    keys = [_key(c) for c in n.items]
    if n.kind in ("tuple", "labelled"):
        brackets = n.text or "()"
        return brackets[0] + ",".join(keys) + brackets[1]
    if n.kind == "ratio":
        return ":".join(keys)
    if n.kind == "matrix":
        return "matrix[" + ";".join(keys) + "]"
    return ("U" if n.kind == "union" else "") + "{" + ",".join(sorted(keys)) + "}"
