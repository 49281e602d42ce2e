"""When two answer trees (see :mod:`structure`) are equal: the gold first, the prediction second.

:func:`compare` walks both trees and asks a leaf comparison (fast path in the caller, sympy in
the worker) only for single values. Rules:

- lists are sets: same values in any order, nothing missing or extra (a subset of a "find
  all" answer fails), a list never a single value; a predicted tuple ``(1, 2, 3)`` may stand
  for a bare gold list (:func:`as_list`), never the reverse;
- tuples and intervals are ordered and their brackets must agree; unions unordered;
  matrices entrywise; ratios (``3:2``, ``12:00``) ordered; a ratio of two parts against a
  value is the fraction it makes (``1:2`` = ``\\frac12``; ``12:00`` none);
- labels: ``x=3`` = ``3`` (one label: its name is not checked, ``x=3`` = ``y=3``); labelled
  lists match by label when both sides use the same labels, else in written order; a
  labelled gold (``p=3, q=2``) equals the tuple ``(3,2)`` or the list ``3, 2`` in that order;
- equations (``eqn``): compared as equations by the leaf comparison; a gold value against a
  predicted computation ``5\\times 6\\times 4=120`` (or a chain ``a+2z=2z+a=101``) takes its
  last part (math-verify's rule), and so does a named quantity's value (``|r-s|=16``,
  ``x+y=4027``: :func:`structure.named_quantity`) and an identity (``(x-2)(x+2) = x^2-4``: its
  sides equal), but not an equation in one unknown (gold 4, ``x^2=4``); a gold equation
  never equals a bare value (``7=11a+c`` != ``11a+c``);
- relations: same operators and sides, else the leaf comparison on the whole relations
  (``-x>-1`` = ``x<1``); strict never equals non-strict. **Relation vs interval**, both
  ways: a relation solved for one variable (``x\\geq5``, ``-1<x<3``, ``x\\ne 2``) is the
  interval it describes (``[5,\\infty)``); an unsolved one (``x^2<4``) describes none;
- multiple choice: a letter equals ``(B)``, ``\\text{(B) } 12``; a choice with a value also
  equals that value; a different letter never does;
- decimal comma: ``1,22`` (no space, not a thousands group) equals the decimal ``1.22``, and
  nothing else but the list ``1, 22``; ``1,5`` != ``15``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from dapo_bench.verifiers.math.normalize import parse_number
from dapo_bench.verifiers.math.structure import Node, is_label

LeafEq = Callable[[str, str], bool]


class Trace:
    """Which rule decided a comparison: the outermost shape rule (``labels in order``,
    ``relation vs interval``...) and the last leaf or shape decision, as ``str(trace)``."""

    __slots__ = ("_last", "_shape")

    def __init__(self) -> None:
        self._shape, self._last = "", ""

    def note(self, rule: str) -> bool:
        self._last = rule
        return True

    def shape(self, rule: str) -> None:
        if not self._shape:
            self._shape = rule

    @property
    def rule(self) -> str:
        if self._shape and self._last and self._last != self._shape:
            return f"{self._shape}: {self._last}"
        return self._shape or self._last


_NO_TRACE = Trace()
_LETTER = re.compile(r"^[A-E]$")
_DECIMAL = re.compile(r"^-?\d+\.\d+$")


def compare(g: Node, p: Node, leaf_eq: LeafEq, trace: Trace | None = None) -> bool:
    """True when prediction tree *p* equals gold tree *g*. *leaf_eq* may raise to abort
    (the fast path raises when it cannot decide a leaf)."""
    t = trace or _NO_TRACE
    if g == p:
        return t.note("same form")

    def eq(a: Node, b: Node) -> bool:
        return compare(a, b, leaf_eq, t)

    def no(rule: str) -> bool:
        t.note(rule)
        return False

    gk, pk = g.kind, p.kind
    if gk == "eq" and pk == "eq":
        t.shape("labelled values")
        same = eq(g.items[0], p.items[0])
        if same or g.var == p.var:
            return same
        return leaf_eq(g.src, p.src)  # y=2x+1 vs x=(y-1)/2: as equations
    if gk in ("eq", "eqn") and pk in ("eq", "eqn"):
        t.shape("equations")
        return leaf_eq(g.src, p.src)
    if gk == "eqn":
        return no("gold equation vs value")
    if gk == "eq" or pk == "eq":
        t.shape("label dropped")
        return eq(g.items[0], p) if gk == "eq" else eq(g, p.items[0])
    if pk == "eqn":
        if p.var == "chain":
            t.shape("chain: last part")
        elif p.var == "named":  # |r-s|=16, x+y=4027: the value of what it names
            t.shape("named quantity: its value")
        elif p.items[1].kind == "leaf" and _identity(p, leaf_eq):  # (x-2)(x+2) = x^2-4
            t.shape("identity: its value")
        else:
            return no("value vs equation")  # x^2=4 is not the answer 4
        return eq(g, p.items[1])
    if gk == "choice" or pk == "choice":
        return _choice(g, p, eq, t)
    if gk == "rel":
        if pk == "rel":
            return _relations(g, p, leaf_eq, eq, no)
        iv = as_interval(g)
        if iv is None:
            return no("relation vs value")
        t.shape("relation vs interval")
        return eq(iv, p)
    if pk == "rel":
        if gk in ("tuple", "union") and g.var == "member":  # x \in [-2,7] asks for the set,
            return no("membership vs relation (policy)")  # as math-verify's policy has it
        iv = as_interval(p) if gk in ("tuple", "union") else None
        if iv is None:
            return no("value vs relation")
        t.shape("interval vs relation")  # [1/2, 8] and 1/2 <= x <= 8: the same set, solved
        return eq(g, iv)
    if gk == "labelled" or pk == "labelled":
        return _labelled(g, p, eq, t)
    if (gk, pk) == ("list", "leaf") and _comma_decimal(g, p) or (
            (gk, pk) == ("leaf", "list") and _comma_decimal(p, g)):
        return t.note("decimal comma")
    if gk == "matrix" and pk == "leaf" and "\\begin" in p.text:
        return leaf_eq(g.src, p.text)  # matrix arithmetic: A+B, AB
    if pk == "list" and gk != "list" and len(set(p.items)) == 1:  # "-2, -2": one value, twice
        p, pk = p.items[0], p.items[0].kind
        if g == p:
            return t.note("same form")
    if gk == "list" and pk == "tuple" and as_list(p):  # "(1, 2, 3)" for "1,2,3"
        t.shape("tuple as the list")
        p = Node("list", items=p.items)
        pk = "list"
    if "ratio" in (gk, pk) and "leaf" in (gk, pk):
        return _ratio_value(g, p, leaf_eq, t)
    if gk != pk:
        return no(f"shape: {gk} vs {pk}")
    if gk == "leaf":
        return leaf_eq(g.text, p.text)
    if len(g.items) != len(p.items):
        return no(f"{gk} of {len(g.items)} vs {len(p.items)}")
    t.shape(gk)
    if gk in ("tuple", "matrix", "ratio"):
        if g.text != p.text:
            return no(f"brackets {g.text} vs {p.text}")
        return all(eq(a, b) for a, b in zip(g.items, p.items))
    return _unordered(list(g.items), list(p.items), eq)


def _identity(p: Node, leaf_eq: LeafEq) -> bool:
    """Whether a predicted equation's two sides are equal (a computation written out to its
    result, ``(x-2)(x+2)(x^2+4) = x^4 - 16``), as the leaf comparison decides (the fast path's
    "undecided" sends the pair to sympy, as for any leaf)."""
    return bool(leaf_eq(p.items[0].text, p.items[1].text))


def as_list(p: Node) -> bool:
    """Whether a predicted tuple may stand for a bare gold list (OlympiadBench writes every
    answer of several values bare: ``1,2,3`` for "(1, 2, 3)"): any ``(..)``, and ``[..]`` of
    three or more items (``[1, 2]`` is an interval). Compared as the list is: as a set."""
    return p.text == "()" or (p.text == "[]" and len(p.items) >= 3)


def _ratio_value(g: Node, p: Node, leaf_eq, t: Trace) -> bool:
    """A ratio of two parts against a value: ``1:2`` is ``\\frac{1}{2}``, never ``2``."""
    r, v = (g, p) if g.kind == "ratio" else (p, g)
    if len(r.items) != 2 or any(n.kind != "leaf" for n in r.items):
        return not t.note("ratio vs value")
    den = parse_number(r.items[1].text)
    if den is not None and den.value == 0:
        return not t.note("ratio vs value")  # 12:00 is a time, not a fraction
    t.shape("ratio as a fraction")
    frac = f"\\frac{{{r.items[0].text}}}{{{r.items[1].text}}}"
    return leaf_eq(v.text, frac) if v is g else leaf_eq(frac, v.text)


def _unordered(gs: list[Node], ps: list[Node], eq) -> bool:
    used = [False] * len(gs)
    for p in ps:
        for j, g in enumerate(gs):
            if not used[j] and eq(g, p):
                used[j] = True
                break
        else:
            return False
    return True


def _choice(g: Node, p: Node, eq, t: Trace) -> bool:
    def letter(n: Node) -> str | None:
        if n.kind == "choice":
            return n.text
        return n.text if n.kind == "leaf" and _LETTER.match(n.text) else None

    lg, lp = letter(g), letter(p)
    if lg is not None and lp is not None:
        return t.note("choice letter") if lg == lp else not t.note("choice letters differ")
    t.shape("choice value")
    if g.kind == "choice" and g.items and lp is None:
        return eq(g.items[0], p)
    if p.kind == "choice" and p.items and lg is None:
        return eq(g, p.items[0])
    return not t.note("choice vs value")


def _relations(g: Node, p: Node, leaf_eq, eq, no) -> bool:
    if g.text == p.text and len(g.items) == len(p.items) and all(
            eq(a, b) for a, b in zip(g.items, p.items)):
        return True
    if len(g.items) != 2 or len(p.items) != 2:
        return no("relations differ")
    if ("\\ne" in g.text) != ("\\ne" in p.text) or ("<" in g.text) != ("<" in p.text):
        return no("relation operators differ")
    return leaf_eq(g.src, p.src)


_INF = Node("leaf", "\\infty")
_NEG_INF = Node("leaf", "-\\infty")


def as_interval(r: Node) -> Node | None:
    """The interval (or union) a relation in one variable describes, or None."""
    ops = r.text.split()
    a, b = r.items[0], r.items[-1]
    if len(r.items) == 3:
        if not is_label(r.items[1].text):
            return None
        brackets = ("(" if ops[0] == "<" else "[") + (")" if ops[1] == "<" else "]")
        return Node("tuple", brackets, (a, b))
    if ops == ["\\ne"]:
        v = b if is_label(a.text) else a if is_label(b.text) else None
        if v is None:
            return None
        return Node("union", items=(Node("tuple", "()", (_NEG_INF, v)),
                                    Node("tuple", "()", (v, _INF))))
    closed = ops[0] == "\\leq"
    if is_label(a.text) and not is_label(b.text):  # x < b
        return Node("tuple", "(" + ("]" if closed else ")"), (_NEG_INF, b))
    if is_label(b.text) and not is_label(a.text):  # a < x
        return Node("tuple", ("[" if closed else "(") + ")", (a, _INF))
    return None


def _values(n: Node) -> list[Node]:
    return [it.items[0] if it.kind == "eq" else it for it in n.items]


def _labelled(g: Node, p: Node, eq, t: Trace) -> bool:
    if g.kind == "labelled" and p.kind == "labelled":
        if len(g.items) != len(p.items):
            return not t.note("labelled lists differ in length")
        gl, pl = {e.var: e.items[0] for e in g.items}, {e.var: e.items[0] for e in p.items}
        if set(gl) == set(pl):
            t.shape("by label")
            return all(eq(gl[k], pl[k]) for k in gl)
        t.shape("labels in order")
        return all(eq(a, b) for a, b in zip(_values(g), _values(p)))
    lab, other = (g, p) if g.kind == "labelled" else (p, g)
    if other.kind == "tuple" and other.text != "()" or other.kind not in ("tuple", "list"):
        return not t.note(f"labelled vs {other.kind}")
    if len(lab.items) != len(other.items):
        return not t.note("labelled vs list of another length")
    if other.kind == "list" and other is g:  # a bare gold list: order does not matter
        t.shape("labelled values as a set")
        return _unordered(list(g.items), _values(p), eq)
    t.shape("labels in order")
    pairs = zip(_values(g), other.items) if lab is g else zip(g.items, _values(p))
    return all(eq(a, b) for a, b in pairs)


def _comma_decimal(lst: Node, leaf: Node) -> bool:
    """``1,22`` written without a space against the decimal ``1.22`` (same value)."""
    if "," not in lst.text or not _DECIMAL.match(leaf.text):
        return False
    a, b = parse_number(lst.text.replace(",", ".")), parse_number(leaf.text)
    return a is not None and b is not None and a.value == b.value
