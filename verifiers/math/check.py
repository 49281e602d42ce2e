"""The comparison of one prediction with one gold answer, fast path and full path.

:func:`fast_compare` runs in the calling process without sympy and answers True, False or
None ("needs sympy"); :func:`full_compare` (run inside the bounded worker, see ``worker.py``)
settles the rest with sympy. Both walk the same :mod:`structure` tree, so the rules for lists,
tuples, intervals and equations are the same on both paths.

The fast path decides: identical normalised values; plain numbers (see
:func:`normalize.numbers_equal` for the exact/decimal/percent rules); and words of four or
more letters (case-insensitive: ``East`` = ``east``).
"""

from __future__ import annotations

import re
from functools import lru_cache

from dapo_bench.verifiers.math.normalize import clean, numbers_equal, parse_number
from dapo_bench.verifiers.math.structure import Node, compare, parse


class Undecided(Exception):
    """The fast path cannot decide a leaf; the pair needs sympy."""


@lru_cache(maxsize=8192)
def prepare(answer: str) -> Node:
    """Clean and parse one answer into a tree (cached: RL compares many predictions with one
    gold). Raises normalize.TooLarge for oversize input."""
    return parse(clean(answer))


_WORD = re.compile(r"^[A-Za-z]+$")


def fast_leaf_eq(g: str, p: str) -> bool:
    """Decide one leaf pair without sympy, or raise :class:`Undecided`."""
    if g == p:
        return True
    gn, pn = parse_number(g), parse_number(p)
    if gn is not None and pn is not None:
        return numbers_equal(gn, pn)
    gw, pw = _WORD.match(g), _WORD.match(p)
    if gw and pw:
        if max(len(g), len(p)) >= 4:
            return g.lower() == p.lower()
        if len(g) == len(p) == 1 and not {g, p} & _CONSTANTS:
            return False  # two different variables or choice letters
    elif (gn is not None and pw and len(p) > 1) or (pn is not None and gw and len(g) > 1):
        return False  # a number against a word of letters only
    raise Undecided


_CONSTANTS = {"e", "i"}  # single letters sympy reads as constants (Euler's e, imaginary i)


def fast_compare(gold: Node, pred: Node) -> bool | None:
    """True/False when decidable without sympy, else None."""
    try:
        return compare(gold, pred, fast_leaf_eq)
    except Undecided:
        return None


def full_compare(gold: str, pred: str) -> tuple[bool, str | None]:
    """(equal, why_not) with sympy for the leaves the fast path cannot decide.

    *why_not* is "too_large" or "parse_error" when that stopped a leaf from being compared.
    Runs in the worker process (it imports sympy); callers bound it with a deadline.
    """
    from dapo_bench.verifiers.math import symbolic

    state = symbolic.State()
    ok = compare(prepare(gold), prepare(pred), lambda g, p: symbolic.leaf_eq(g, p, state))
    if ok:
        return True, None
    return False, "too_large" if state.too_large else "parse_error" if state.parse_failed else None
