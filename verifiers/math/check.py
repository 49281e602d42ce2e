"""The comparison of one prediction with one gold answer, fast path and full path.

:func:`fast_compare` runs in the calling process without sympy and answers True, False or
None ("needs sympy"); ``symbolic.full_compare`` (run inside the bounded worker, see
``pool.py``) settles the rest with sympy, calling this module's leaf rule first (symbolic
imports check, never the reverse). Both walk the same :mod:`structure` tree with the same
:mod:`match` rules, so lists, tuples, labels, relations and intervals behave the same on both.

The fast path decides leaves that are identical normalised values; plain numbers (see
:func:`normalize.numbers_equal` for the exact/decimal/percent rules); words of four or more
letters (case-insensitive: ``East`` = ``east``); two different single letters (variables or
choice letters); a number against a word; and two values that both have an exact canonical
form (:mod:`exact`: polynomials with radical coefficients, ``3\\sqrt{2}`` = ``\\sqrt{18}``,
``(x+2)(x+3)`` = ``x^2+5x+6``), decided both ways without sympy.
"""

from __future__ import annotations

import re
from functools import lru_cache

from dapo_bench.verifiers.math.exact import canonical
from dapo_bench.verifiers.math.match import Trace, compare
from dapo_bench.verifiers.math.normalize import (
    clean,
    number_with_unit,
    numbers_equal,
    parse_number,
)
from dapo_bench.verifiers.math.structure import Node, parse, unknowns


class Undecided(Exception):
    """The fast path cannot decide a leaf; the pair needs sympy."""


@lru_cache(maxsize=8192)
def prepare(answer: str) -> Node:
    """Clean and parse one answer into a tree (cached: RL compares many predictions with one
    gold). Raises normalize.TooLarge for oversize input."""
    return parse(clean(answer))


_WORD = re.compile(r"^[A-Za-z]+$")
_CONSTANTS = {"e", "i"}  # single letters sympy reads as constants (Euler's e, imaginary i)
# answer words shorter than four letters (read as words, case aside; never as products xy)
SHORT_WORDS = frozenset({"yes", "no", "odd"})
# what binds a letter (\\sum_{k=1}^{5} k^2 is a number): no "number vs expression" then
_BINDS = re.compile(r"\\(?:sum|prod|int|oint|lim|partial|binom|choose|mathrm\{d\})|\\frac\{d")
_INCOMPLETE = re.compile(r"(?:[-+*/^=_(\[{]|\\(?:[dtc]?frac|sqrt|left|text|boxed|mathrm|cdot|times|"
                         r"div|pm)?)\s*$")


def incomplete(answer: str) -> bool:
    """An answer cut before its end (``1/``, ``24 +``, ``2^6 * 3^9 * 5^``, ``\\frac``): no
    reading of it is a value (sympy could not parse it either)."""
    return bool(_INCOMPLETE.search(answer.rstrip(" .,;:$")))


def fast_leaf_eq(g: str, p: str, trace: Trace | None = None) -> bool:
    """Decide one leaf pair without sympy, or raise :class:`Undecided`."""
    note = trace.note if trace else (lambda rule: True)
    if g == p:
        return note("same form")
    gn, pn = parse_number(g), parse_number(p)
    if gn is not None and pn is not None:
        note("number")
        return numbers_equal(gn, pn)
    if gn is not None and (pu := number_with_unit(p)) is not None:
        note("number with its unit")  # 2.78m, 9.8m/s^2 for 2.78, 9.8
        return numbers_equal(gn, pu)
    if gn is not None and pn is None and not _BINDS.search(p) and unknowns(p):
        note("number vs expression in unknowns")  # 29 vs "f(t)", "(3V)/(S)", "2^x"
        return False
    gw, pw = _WORD.match(g), _WORD.match(p)
    if gw and pw:
        if max(len(g), len(p)) >= 4 or g.lower() in SHORT_WORDS or p.lower() in SHORT_WORDS:
            note("word")
            return g.lower() == p.lower()
        if len(g) == len(p) == 1 and not {g, p} & _CONSTANTS:
            note("different letters")
            return False
    elif (gn is not None and pw and len(p) > 1) or (pn is not None and gw and len(g) > 1):
        note("number vs word")
        return False
    ga = canonical(g)
    if ga is not None:
        pa = canonical(p)
        if pa is not None:
            note("exact algebra")
            return ga == pa
    raise Undecided


def fast_compare(gold: Node, pred: Node, trace: Trace | None = None) -> bool | None:
    """True/False when decidable without sympy, else None."""
    try:
        return compare(gold, pred, lambda g, p: fast_leaf_eq(g, p, trace), trace)
    except Undecided:
        return None
