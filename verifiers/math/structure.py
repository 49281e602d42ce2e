"""The shape of an answer: lists, tuples, intervals, relations, labels, ratios, choices...

:func:`parse` turns a cleaned answer (see :func:`normalize.clean`) into a small tree of
:class:`Node` s whose leaves are single values (squeezed strings). Pure Python. The rules that
compare two trees are in :mod:`match`. Node kinds, in the order the parser tries them:

- ``list``: ``1, 2``; ``1331 and 1728``; ``(11,7)or(7,11)``; ``-12;-11``; ``{1,3}`` (plain
  braces group); ``\\{..\\}``; ``\\pm`` pairs. Nested lists are flattened, exact duplicates
  dropped (a list is a set). ``a,b`` written without a space keeps its text (``1,5``: see
  the decimal-comma rule in :mod:`match`).
- ``labelled``: a list of labelled values with distinct labels (``p=3, q=2``; ``AB=4, CD=5``).
  A list whose items share one label (``x=2 or x=-3``), or whose first item only is labelled
  (``a=4, -8, -10``), is the ``list`` of its values.
- ``union`` (``\\cup``), ``tuple`` (``(1,2)``, ``[0,1)``: brackets kept, items ordered; ``;``
  separates too), ``matrix`` (``pmatrix``/``bmatrix``/``array``...).
- ``choice``: a multiple-choice letter with its value: ``(B) 12``, ``\\textbf{(D) }7``.
- ``\\approx``: its exact side (``\\frac13 \\approx 0.33`` is 1/3; ``x \\approx 3.14`` is 3.14);
  ``x \\in S``: S (an interval or union keeps ``var="member"``: stated as a membership).
- ``rel``: inequalities, oriented to ``<``/``\\leq`` (``5 \\leq x`` = ``x \\geq 5``), chains
  (``-1<x<3``) and ``\\ne``; ``text`` holds the operators, ``src`` the whole relation.
- ``eq``: a label equals a value (``x=3``, ``f(x)=x^2+1``, ``(p,q)=(3,2)``,
  ``V_1:V_2=11:21``, ``|AB|=1``, ``\\frac{NO}{BO}=..``); a chain ``x=5+5+1=11`` keeps its last
  part, and a chain with a label inside (``1=\\zzz=x=0``) is read from its last label. A label
  is a letter or command with subscripts, primes or arguments, an upper-case name (``AB``), or a
  tuple, ratio, fraction or ``|..|`` of labels; ``xy`` is not (it may be a product).
- ``eqn``: any other equation ``L=R`` (``2x+4y-3=0``; chains keep their last two parts);
  ``var`` is ``chain`` for a computation (``5\\times 6=30``, ``a+2z=2z+a=101``: a chain of
  three or more parts, or a left side without letters).
- ``ratio``: ``3:2``, ``12:00`` (ordered parts, never a division).

Raises normalize.TooLarge beyond MAX_NODES nodes.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from dapo_bench.verifiers.math.normalize import TooLarge, squeeze, strip_unit


@dataclass(frozen=True)
class Node:
    kind: str
    text: str = ""  # leaf: value; tuple: brackets; rel: operators; choice: letter; list: a,b
    items: tuple = ()  # eq: (value,); eqn: (left, right)
    var: str = ""  # eq: the label
    src: str = ""  # rel, eq, eqn: the whole squeezed relation/equation


_OPEN, _CLOSE = "([{", ")]}"
_WORD_SEP = re.compile(r"\s+(?:and|or)\s+|(?<=[)\]}])\s*(?:and|or)\s*(?=[(\[{\\])")
_MATRIX = re.compile(r"^\\begin\{([pbBvV]?matrix|array)\}(?:\{[^{}]*\})?(.*)\\end\{\1\}$", re.DOTALL)
_NAME = r"(?:[a-zA-Z]|\\(?!pi\b|infty\b)[a-zA-Z]+|[A-Z]{2,})(?:_\{?[\w,]+\}?)?'*"
_LABEL = re.compile(rf"^(?:{_NAME}(?:\([a-zA-Z,]*\))?|\|{_NAME}\||m?\\angle\s?\{{?[A-Z]+\}}?"
                    rf"|\\overline\{{[A-Z]+\}})$")
_FRAC_LABEL = re.compile(r"^\\frac\{([^{}]+)\}\{([^{}]+)\}$")
_CHOICE = re.compile(r"^\(\s*([A-E])\s*\)\s*(.*)$", re.DOTALL)
_COMMA_PAIR = re.compile(r"^-?\d+,\d+$")
_RELS = ("\\leq", "\\geq", "\\ne", "<", ">")
_FLIP = {"<": ">", ">": "<", "\\leq": "\\geq", "\\geq": "\\leq", "\\ne": "\\ne"}


def split_top(s: str, seps: tuple[str, ...], keep: bool = False) -> list[str]:
    """Split *s* at separators outside every bracket (``\\{``, ``\\}`` count); with *keep*,
    the separators are kept as items between the parts."""
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
                    if keep:
                        parts.append(sep)
                    i += len(sep)
                    start = i
                    break
            else:
                i += 1
            continue
        i += 1
    parts.append(s[start:])
    return parts


def wraps(s: str, open_: str, close: str) -> bool:
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


def is_label(s: str) -> bool:
    """True when *s* (squeezed) names a quantity rather than computing one (module docstring)."""
    if _LABEL.match(s):
        return True
    if len(s) > 2 and s[0] == "(" and wraps(s, "(", ")"):
        inner = split_top(s[1:-1], (",",))
        return len(inner) > 1 and all(is_label(p) for p in inner)
    parts = split_top(s, (":",))
    if len(parts) > 1:
        return all(is_label(p) for p in parts)
    m = _FRAC_LABEL.match(s)
    return m is not None and is_label(m.group(1)) and is_label(m.group(2))


_COMMANDS = re.compile(r"\\[a-zA-Z]+")
_LETTER = re.compile(r"(?<![A-Za-z])[A-Za-z](?:_\{?\w+\}?)?(?![A-Za-z])|[A-Za-z]{2,}")
_FUNC_AT = re.compile(r"^[A-Za-z](?:_\{?\w+\}?)?'*\(([^()]*)\)$")


def unknowns(s: str) -> set[str]:
    """The names of *s* (squeezed) that stand for unknowns: letters with their subscripts
    (``a_1``), not inside a command name (``\\pi``, ``\\sqrt``), not ``e`` or ``i``; a run of
    letters (``xy``) counts each."""
    out: set[str] = set()
    for m in _LETTER.finditer(_COMMANDS.sub(" ", s)):
        name = m.group(0)
        out.update([name] if "_" in name or len(name) == 1 else name)
    return out - {"e", "i"}


def named_quantity(left: str, right: str) -> bool:
    """Whether ``left = right`` states the value of a named quantity, as a competition answer
    does (``|r-s|=16``, ``E(2020,1993)=76``, ``x+y=4027``, ``m+n=37``): the right side is a
    value (no unknown), and the left side is a function at a point, an absolute value, or an
    expression in two or more unknowns. An equation in one unknown (``x^2=4``, ``2x+1=9``) is
    an equation to solve, never its right side."""
    if not right or unknowns(right):
        return False
    m = _FUNC_AT.match(left)
    if m:
        return not unknowns(m.group(1))
    if len(left) > 2 and left[0] == "|" and left[-1] == "|" and unknowns(left):
        return True
    return len(unknowns(left)) >= 2


MAX_NODES = 500  # nodes per answer (bounds \\pm expansion and huge lists); beyond: too_large


def parse(s: str) -> Node:
    return _parse(s, 0, [MAX_NODES])


def _list(items: list[Node], text: str = "") -> Node:
    flat: list[Node] = []
    for it in items:
        if it.kind == "list":
            flat.extend(it.items)
        else:
            flat.append(it)
    eqs = [it for it in flat if it.kind == "eq"]
    if eqs and len(flat) > 1:
        labels = [e.var for e in eqs]
        if len(eqs) == len(flat) and len(set(labels)) == len(labels):
            return Node("labelled", items=tuple(flat))
        if len(set(labels)) == 1 and (len(eqs) == len(flat) or flat[0].kind == "eq"):
            return _list([it.items[0] if it.kind == "eq" else it for it in flat])
    out = tuple(dict.fromkeys(flat))
    if len(out) == 1 and len(flat) > 1:  # "-2,-2": a and b, both -2 (a set is not so written)
        return Node("list", text, tuple(flat))
    return out[0] if len(out) == 1 and not text else Node("list", text, out)


def _parse(s: str, depth: int, budget: list[int]) -> Node:
    budget[0] -= 1
    if budget[0] < 0:
        raise TooLarge(f"answer with more than {MAX_NODES} parts")
    s = s.strip()
    if depth > 40:
        return Node("leaf", squeeze(s))

    def sub(parts) -> list[Node]:
        return [_parse(p, depth + 1, budget) for p in parts if p.strip()]

    if len(s) > 1 and s[0] == "{" and wraps(s, "{", "}"):
        return _parse(s[1:-1], depth + 1, budget)
    parts = [p for p in _WORD_SEP.split(s) if p.strip(" ,")]
    if len(parts) > 1:
        return _list(sub(p.strip(" ,") for p in parts))
    for seps in ((";",), (",",)):
        parts = split_top(s, seps)
        if len(parts) > 1:
            return _list(sub(parts), s if _COMMA_PAIR.match(s) else "")
    parts = split_top(s, (r"\cup",))
    if len(parts) > 1:
        return Node("union", items=tuple(sub(parts)))
    if wraps(s, "\\{", "\\}"):
        return _list(sub(split_top(s[2:-2], (",", ";"))))
    m = _CHOICE.match(s)
    if m and (m.group(2).strip() or len(s) <= 3):
        rest = m.group(2).strip()
        return Node("choice", m.group(1), (_parse(rest, depth + 1, budget),) if rest else ())
    if len(s) >= 2 and s[0] in "([" and s[-1] in ")]" and wraps(s, s[0], s[-1]):
        inner = split_top(s[1:-1], (",",))
        if len(inner) == 1:
            inner = split_top(s[1:-1], (";",))
        if len(inner) == 1:
            if s[0] + s[-1] == "()" or _MATRIX.match(inner[0].strip()):
                return _parse(inner[0], depth + 1, budget)
            return Node("leaf", squeeze(s))
        return Node("tuple", s[0] + s[-1], tuple(_parse(p, depth + 1, budget) for p in inner))
    m = _MATRIX.match(s)
    if m and "\\begin{" not in m.group(2):
        rows = [r for r in split_top(m.group(2), ("\\\\",)) if r.strip()]
        return Node("matrix", src=squeeze(s), items=tuple(
            Node("tuple", "[]", tuple(_parse(c, depth + 1, budget) for c in split_top(r, ("&",))))
            for r in rows))
    pm = split_top(s, (r"\pm", r"\mp"))
    if 1 < len(pm) <= 4:
        alts = ["".join(a + b for a, b in zip(pm, signs)) + pm[-1]
                for signs in itertools.product("+-", repeat=len(pm) - 1)]
        return _list(sub(alts))
    parts = split_top(s, (r"\approx",))
    if len(parts) > 1:
        left = parts[0].strip()
        exact = parts[-1] if is_label(squeeze(left)) or not left else left
        return _parse(exact, depth + 1, budget)
    parts = split_top(s, (r"\in",))
    if len(parts) == 2 and is_label(squeeze(parts[0])):
        member = _parse(parts[1], depth + 1, budget)  # "x \in S" is S, stated as a membership
        if member.kind in ("tuple", "union"):
            member = Node(member.kind, member.text, member.items, "member", member.src)
        return member
    rel = _relation(s, depth, budget)
    if rel is not None:
        return rel
    parts = [p for p in split_top(s, ("=",)) if p.strip()]
    if len(parts) > 1:
        labels = [k for k, p in enumerate(parts[:-1]) if is_label(squeeze(p))]
        if labels:
            k = 0 if 0 in labels else labels[-1]
            value = _parse(parts[-1], depth + 1, budget)
            return Node("eq", items=(value,), var=squeeze(parts[k]),
                        src=squeeze(parts[k] + "=" + parts[-1]))
        chain = len(parts) > 2 or not re.search(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", parts[0]))
        left, right = squeeze(parts[-2]), squeeze(parts[-1])
        var = "chain" if chain else "named" if named_quantity(left, right) else ""
        return Node("eqn", items=(Node("leaf", left), _parse(parts[-1], depth + 1, budget)),
                    var=var, src=left + "=" + right)
    parts = split_top(s, (":",))
    if len(parts) > 1 and all(p.strip() for p in parts):
        return Node("ratio", items=tuple(sub(parts)))
    return Node("leaf", squeeze(strip_unit(s)))


def _relation(s: str, depth: int, budget: list[int]) -> Node | None:
    bits = split_top(s, _RELS, keep=True)
    if len(bits) < 3:
        return None
    parts, ops = bits[0::2], bits[1::2]
    if any(not p.strip() for p in parts) or any("=" in p for p in parts):
        return None
    if "\\ne" in ops and len(ops) > 1:
        return Node("leaf", squeeze(s))
    if all(o in (">", "\\geq") for o in ops):
        parts, ops = parts[::-1], [_FLIP[o] for o in ops[::-1]]
    elif not all(o in ("<", "\\leq", "\\ne") for o in ops):
        return Node("leaf", squeeze(s))  # a < x > b: no single reading
    src = "".join(p + o for p, o in zip(parts, ops)) + parts[-1]
    return Node("rel", " ".join(ops), tuple(Node("leaf", squeeze(p)) for p in parts),
                src=squeeze(src))


def leaves(n: Node) -> list[str]:
    """All leaf texts of *n* (used for size checks and canonical keys)."""
    if n.kind == "leaf":
        return [n.text]
    return [t for c in n.items for t in leaves(c)]
