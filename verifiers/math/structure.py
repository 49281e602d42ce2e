"""The shape of an answer: lists, sets, tuples, intervals, unions, matrices, ``\\pm``, equations.

:func:`parse` turns a cleaned answer string into a small tree of :class:`Node` s whose leaves
are single values (squeezed strings); :func:`compare` walks two trees and asks a leaf
comparison for the values. Pure Python; the leaf comparison decides what is numeric or
symbolic (fast path in the caller, sympy in the worker).

Rules (what counts as the same shape):
- bare lists (``1, 2``; ``1331 and 1728``; ``1 or 2``), sets ``\\{..\\}`` and ``\\pm`` pairs
  are unordered multisets and match each other; a partial list is not equal;
- tuples and intervals are ordered and their brackets must agree: ``[0,1)`` != ``(0,1)``,
  ``(1,2)`` != ``[1,2]``; a tuple never equals a bare list;
- unions (``\\cup``) are unordered; matrices (``pmatrix``, ``bmatrix``, ``matrix``) compare
  entrywise with the same shape;
- ``(x)`` with one item is grouping, not a tuple: ``\\text{(B)}`` = ``B``;
- an equation whose left side is a variable (``x``, ``a_1``, ``f(x)``, ``N(n)``) equals its
  right side: ``x=3`` = ``3``; a chain ``a=b=5`` is read by its last part;
  ``\\approx`` reads as its right side. Other equations go to the leaf comparison whole.

Not covered: inequalities vs intervals (``x>3`` vs ``(3,\\infty)``), set-builder notation.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from dapo_bench.verifiers.math.normalize import TooLarge, squeeze


@dataclass(frozen=True)
class Node:
    kind: str  # leaf | list | tuple | union | matrix | eq
    text: str = ""  # leaf: squeezed value; tuple: brackets "()" "[)" ...; eq: whole equation
    items: tuple = ()  # eq: (right side,)
    var: str = ""  # eq: the variable on the left


_OPEN, _CLOSE = "([{", ")]}"
_WORD_SEP = re.compile(r"\s+(?:and|or)\s+|,?\s*\\(?:text|mbox)\{\s*(?:and|or)\s*\}\s*")
_MATRIX = re.compile(r"^\\begin\{([pbBvV]?matrix|array)\}(?:\{[^{}]*\})?(.*)\\end\{\1\}$", re.DOTALL)
_VARIABLE = re.compile(r"^(?:[a-zA-Z]|\\[a-zA-Z]+)(?:_\{?[\w,]+\}?)?(?:'+)?(?:\([a-zA-Z,\s]*\))?$")


def _top_level(s: str, seps: tuple[str, ...]) -> list[str]:
    """Split *s* at separators that are outside every bracket (``\\{``, ``\\}`` count)."""
    parts, depth, start, i, n = [], 0, 0, 0, len(s)
    while i < n:
        ch = s[i]
        if ch == "\\" and i + 1 < n and s[i + 1] in "{}":
            depth += 1 if s[i + 1] == "{" else -1
            i += 2
            continue
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif depth == 0:
            for sep in seps:
                if s.startswith(sep, i) and not (sep[0] == "\\" and s[i + len(sep):i + len(sep)
                                                                      + 1].isalpha()):
                    parts.append(s[start:i])
                    i += len(sep)
                    start = i
                    break
            else:
                i += 1
            continue
        i += 1
    parts.append(s[start:])
    return parts


def _wraps(s: str, open_: str, close: str) -> bool:
    """True when the bracket at s[0] closes at the end of s (for any closing bracket)."""
    if not (s.startswith(open_) and s.endswith(close)):
        return False
    depth, i, n = 0, 0, len(s)
    while i < n:
        if s[i] == "\\" and i + 1 < n and s[i + 1] in "{}":
            depth += 1 if s[i + 1] == "{" else -1
            i += 2
        else:
            depth += (s[i] in _OPEN) - (s[i] in _CLOSE)
            i += 1
        if depth == 0 and i < n:
            return False
    return True


MAX_NODES = 500  # nodes per answer (bounds \\pm expansion and huge lists); beyond: too_large


def parse(s: str) -> Node:
    """Parse a cleaned answer (see :func:`normalize.clean`) into a :class:`Node` tree.

    Raises normalize.TooLarge beyond MAX_NODES nodes."""
    return _parse(s, 0, [MAX_NODES])


def _parse(s: str, depth: int, budget: list[int]) -> Node:
    budget[0] -= 1
    if budget[0] < 0:
        raise TooLarge(f"answer with more than {MAX_NODES} parts")
    s = s.strip()
    if depth > 40:
        return Node("leaf", squeeze(s))
    parts = [p for p in _WORD_SEP.split(s) if p.strip()]
    if len(parts) > 1:
        return Node("list", items=tuple(_parse(p, depth + 1, budget) for p in parts))
    parts = _top_level(s, (r"\cup",))
    if len(parts) > 1:
        return Node("union", items=tuple(_parse(p, depth + 1, budget) for p in parts))
    parts = _top_level(s, (",", ";"))
    if len(parts) > 1:
        return Node("list", items=tuple(
            _parse(p, depth + 1, budget) for p in parts if p.strip()))
    if _wraps(s, "\\{", "\\}"):
        inner = _top_level(s[2:-2], (",", ";"))
        return Node("list", items=tuple(_parse(p, depth + 1, budget) for p in inner if p.strip()))
    if len(s) >= 2 and s[0] in "([" and s[-1] in ")]" and _wraps(s, s[0], s[-1]):
        inner = _top_level(s[1:-1], (",",))
        if len(inner) == 1:
            if s[0] == "(" and s[-1] == ")":
                return _parse(inner[0], depth + 1, budget)
            return Node("leaf", squeeze(s))
        return Node("tuple", s[0] + s[-1], tuple(_parse(p, depth + 1, budget) for p in inner))
    m = _MATRIX.match(s)
    if m:
        rows = [r for r in _top_level(m.group(2), ("\\\\",)) if r.strip()]
        return Node("matrix", items=tuple(
            Node("tuple", "[]", tuple(
                _parse(c, depth + 1, budget) for c in _top_level(r, ("&",))))
            for r in rows))
    pm = _top_level(s, (r"\pm", r"\mp"))
    if 1 < len(pm) <= 4:
        alts = []
        for signs in itertools.product("+-", repeat=len(pm) - 1):
            alts.append("".join(a + b for a, b in zip(pm, signs)) + pm[-1])
        return Node("list", items=tuple(_parse(a, depth + 1, budget) for a in alts))
    parts = _top_level(s, (r"\approx",))
    if len(parts) > 1:
        return _parse(parts[-1], depth + 1, budget)
    parts = [p for p in _top_level(s, ("=",)) if p.strip()]
    if len(parts) > 1:
        lhs = squeeze(parts[0])
        if _VARIABLE.match(lhs):
            rhs = _parse(parts[-1], depth + 1, budget)
            return Node("eq", squeeze(parts[0] + "=" + parts[-1]), (rhs,),
                        lhs)
        return Node("leaf", squeeze(parts[-2] + "=" + parts[-1]))
    return Node("leaf", squeeze(s))


LeafEq = Callable[[str, str], bool]


def compare(g: Node, p: Node, leaf_eq: LeafEq) -> bool:
    """True when prediction tree *p* equals gold tree *g*; leaf values go to *leaf_eq*.

    *leaf_eq* may raise to abort (the fast path raises when it cannot decide a leaf).
    """
    if g.kind == "eq" and p.kind == "eq":
        same_rhs = compare(g.items[0], p.items[0], leaf_eq)  # x=3 vs y=3: names are ignored
        if same_rhs or g.var == p.var:
            return same_rhs
        return leaf_eq(g.text, p.text)  # y=2x+1 vs x=(y-1)/2: compare as equations
    if g.kind == "eq":
        if p.kind == "leaf" and "=" in p.text:
            return leaf_eq(g.text, p.text)
        return compare(g.items[0], p, leaf_eq)
    if p.kind == "eq":
        if g.kind == "leaf" and "=" in g.text:
            return leaf_eq(g.text, p.text)
        return compare(g, p.items[0], leaf_eq)
    if g.kind != p.kind:
        return False
    if g.kind == "leaf":
        return g.text == p.text or leaf_eq(g.text, p.text)
    if len(g.items) != len(p.items):
        return False
    if g.kind in ("tuple", "matrix"):
        return g.text == p.text and all(
            compare(a, b, leaf_eq) for a, b in zip(g.items, p.items))
    return _match_unordered(list(g.items), list(p.items), leaf_eq)


def _match_unordered(gs: list[Node], ps: list[Node], leaf_eq: LeafEq) -> bool:
    used = [False] * len(gs)
    for p in ps:
        for j, g in enumerate(gs):
            if not used[j] and compare(g, p, leaf_eq):
                used[j] = True
                break
        else:
            return False
    return True


def leaves(n: Node) -> list[str]:
    """All leaf texts of *n* (used for size checks and canonical keys)."""
    if n.kind == "leaf":
        return [n.text]
    return [t for c in n.items for t in leaves(c)]
