"""Reading a model response as text: math spans, boxes, sentences. Pure Python, linear time.

- :func:`prepare_text` drops what follows a chat-template token (``<|im_start|>``,
  ``<|im_end|>``, ``<|endoftext|>``, ``<|eot_id|>``: a new turn, not the answer) and undoes
  doubled backslashes before known commands (``\\\\boxed`` -> ``\\boxed``, an escaping artifact).
- :func:`math_spans` finds ``$$..$$``, ``\\[..\\]``, ``\\(..\\)``, ``$..$`` and display
  environments (``align``, ``equation``, ``gather``...). A ``$`` opens inline math only when a
  closing ``$`` follows with no other ``$`` in between, no blank line, and a non-space
  character before it (unless the opener was followed by a space, ``$ 9 $``): so currency
  (``$10,200 + $255 = $10,455.``) is prose, ``$5 + 3 = 8$`` is math.
- :func:`boxes` finds every complete ``\\boxed{..}`` / ``\\fbox{..}`` (``\\boxed 5`` too);
  :func:`last_box_group` groups neighbouring boxes (see its docstring).
- :func:`sentences` cuts a text into sentences of prose pieces and spans; a span is never cut.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from dapo_bench.verifiers.math.clock import EVERY, check, ticks

_CHAT_END = re.compile(r"<\|(?:im_start|im_end|endoftext|eot_id|end_of_text|end_of_solution)\|>")
_DOUBLED = re.compile(
    r"(?<!\\)\\\\(?=(?:boxed|fbox|frac|dfrac|tfrac|cfrac|sqrt|left|right|pi|leq?|geq?|lt|gt|neq?|cdot"
    r"|times|text|textbf|mathrm|in|infty|cup|cap|pm|mp|quad|qquad|approx|begin|end)(?![a-zA-Z]))")
_BOX = re.compile(r"\\(?:boxed|fbox)(?![a-zA-Z])")


def prepare_text(text: str) -> str:
    m = _CHAT_END.search(text, 1)
    if m:
        text = text[:m.start()]
    if "\\\\" in text:
        text = _DOUBLED.sub(r"\\", text)
    return text


class Span(NamedTuple):
    start: int  # of the opening delimiter
    end: int  # after the closing delimiter
    inner: str


class _Finder:
    """``text.find`` (or a regex search) that remembers its last answer for each needle: the
    scan only moves forward, so each needle's searches cover the text once (linear time on
    texts full of unclosed openers, or of openers whose closer is far away)."""

    __slots__ = ("last", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.last: dict[str | re.Pattern, tuple[int, int]] = {}

    def find(self, sub: str | re.Pattern, start: int) -> int:
        got = self.last.get(sub)
        if got is not None and got[0] <= start and (got[1] < 0 or got[1] >= start):
            return got[1]
        if isinstance(sub, str):
            k = self.text.find(sub, start)
        else:
            m = sub.search(self.text, start)
            k = m.start() if m else -1
        self.last[sub] = (start, k)
        return k


_LIVE_DOLLAR = re.compile(r"(?<!\\)\$")  # a closing $: not right after a backslash (\$)
_NONSPACE = re.compile(r"\S")


def _inline(text: str, find, start: int, k: int, dollar: bool) -> tuple[int, bool]:
    """(*k*, the closer of the inline span whose body starts at *start*, or -1; broken). A
    span padded by a space whose body breaks a line (``$ \n 9 \n $``) is *broken*: neither
    math nor prose, as math-verify reads it; an unpadded body never breaks a line; a blank
    body is no span, nor (for ``$``) a body that ends in a space unless it is padded
    (``$10,200 + $255``: the first ``$`` is currency). Only remembered searches, no slice of
    the body: linear time however many openers share a far closer."""
    if not text[start:start + 1].isspace():  # unpadded
        if k == start or (dollar and text[k - 1].isspace()):
            return -1, False
        return (-1, False) if 0 <= find("\n", start) < k else (k, False)
    nonspace = find(_NONSPACE, start)
    if nonspace < 0 or nonspace >= k:  # a blank body
        return -1, False
    return k, 0 <= find("\n", start) < k


# opener -> (its closer, the closer's width, None for a display span or, for an inline one,
# whether it is a dollar: see _inline)
_KINDS: dict[str, tuple[str | re.Pattern, int, bool | None]] = {
    "$": (_LIVE_DOLLAR, 1, True), "\\(": ("\\)", 2, False),
    "$$": ("$$", 2, None), "\\[": ("\\]", 2, None)}
_ENVS = r"begin\{(align|equation|gather|eqnarray|multline|displaymath)(\*?)\}"


@cache
def _delims(dead: frozenset) -> re.Pattern:
    """The openers still worth finding: none of a kind whose closer no longer occurs (``$$``
    stays while ``$`` lives: a ``$$`` is never read as two ``$``)."""
    alts = [] if {"$", "$$"} <= dead else ([r"\$\$?"] if "$" not in dead else [r"\$\$"])
    alts += [re.escape(k) for k in ("\\[", "\\(") if k not in dead] + ["\\\\" + _ENVS]
    return re.compile("|".join(alts))


def math_spans(text: str) -> list[Span]:
    """Math spans in order; a broken span (see :func:`_inline`) has an empty ``inner``. A
    backslash escapes the character after it (``\\$`` is a dollar, ``\\\\[`` no display).
    Each opener is found by one regex search, and an opener whose closer no longer occurs is
    skipped by the next searches, so the time is linear in the text."""
    out: list[Span] = []
    dead: frozenset[str] = frozenset()
    i, find, steps = 0, _Finder(text).find, 0
    search = _delims(dead).search
    while (m := search(text, i)) is not None:
        steps += 1
        if not steps % EVERY:
            check()
        j = b = m.start()
        while b > i and text[b - 1] == "\\":
            b -= 1
        if (j - b) % 2:  # escaped by the backslash before it
            i = j + 1
            continue
        tok, gone = m.group(0), ""  # gone: the kind whose closer no longer occurs
        if tok in _KINDS:
            closer, width, dollar = _KINDS[tok]
            body = j + len(tok)
            k = find(closer, body) if tok not in dead else -1
            gone, broken = "" if k >= 0 else tok, False
            if k >= 0 and dollar is not None:  # an inline span
                k, broken = _inline(text, find, body, k, dollar)
            if k >= 0:
                out.append(Span(j, k + width, "" if broken else text[body:k]))
                i = k + width
                continue
            i = body
        else:  # \begin{env}
            end = f"\\end{{{m.group(1)}{m.group(2)}}}"
            k = find(end, m.end())
            if k >= 0:
                out.append(Span(j, k + len(end), text[m.end():k]))
                i = k + len(end)
                continue
            i = j + 2
        if gone and gone not in dead:  # skipped by the next searches
            dead = dead | {gone}
            search = _delims(dead).search
    return out


def braced(text: str, start: int) -> int:
    """Index after the brace group opening at text[start] (``\\{``/``\\}`` do not count), or -1."""
    depth, i, n = 0, start, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


@dataclass(frozen=True)
class Box:
    start: int
    end: int
    inner: str


MAX_BOXES = 64  # only the last ones can belong to the last group; bounds the brace scans


_TOKEN_BOX = re.compile(r"[^\s$]+")


def boxes(text: str) -> list[Box]:
    out = []
    for m in deque(_BOX.finditer(text), maxlen=MAX_BOXES):  # the last ones, in bounded memory
        i = m.end()
        while i < len(text) and text[i] in " \t\n":
            i += 1
        if i < len(text) and text[i] == "{":
            k = braced(text, i)
            if k > 0 and text[i + 1:k - 1].strip():
                out.append(Box(m.start(), k, text[i + 1:k - 1].strip()))
        elif i > m.end():  # "\boxed 5": one token, up to a space or a math delimiter
            t = _TOKEN_BOX.match(text, i)
            if t:
                out.append(Box(m.start(), t.end(), t.group(0).rstrip(".")))
    return [b for k, b in enumerate(out) if k == 0 or b.start >= out[k - 1].end]


_CONNECTOR_DROP = re.compile(
    r"\$|\\[()\[\]]|\\(?:quad|qquad|text|mbox|textrm|mathrm|hspace\{[^}]*\})(?![a-zA-Z])"
    r"|\\[,;: !]|[{}~&,;=()\s]|\\\\|\b(?:and|or)\b")
_WORD = re.compile(r"[A-Za-z]{2,}")


def joins(between: str) -> bool:
    """True when the text between two boxes only joins them: separators, spacing, math
    delimiters, ``and``/``or``, and at most three other words (``papers and``, ``for part (a)
    and``), with no ``.``, ``:``, ``!``, ``?`` or blank line (``\\boxed{5} was wrong, it is
    \\boxed{6}`` and ``\\boxed{4}, then correcting: \\boxed{5}`` are not joined)."""
    if len(between) > 80 or "\n\n" in between or re.search(r"[.:!?]", between):
        return False
    return len(_WORD.findall(_CONNECTOR_DROP.sub(" ", between))) <= 3


def last_box_group(text: str, found: list[Box] | None = None) -> list[str]:
    """Contents of the last group of joined boxes (see :func:`joins`), duplicates dropped."""
    bs = boxes(text) if found is None else found
    if not bs:
        return []
    k = len(bs) - 1
    while k > 0 and joins(text[bs[k - 1].end:bs[k].start]):
        k -= 1
    out: list[str] = []
    for b in bs[k:]:
        if b.inner not in out:
            out.append(b.inner)
    return out


_SENT_END = re.compile(r"[.!?](?=\s|$)|\n")


def sentences(text: str, spans: list[Span]) -> list[list]:
    """The sentences of *text*: lists of prose strings and :class:`Span` s, in order."""
    out: list[list] = [[]]
    pos = 0
    for sp in ticks([*spans, None]):
        pieces = _SENT_END.split(text[pos:sp.start] if sp else text[pos:])
        if pieces[0].strip():
            out[-1].append(pieces[0])
        if len(pieces) > 1:  # sentence ends: the pieces between them are whole sentences
            out.extend([p] for p in pieces[1:-1] if p.strip())
            out.append([pieces[-1]] if pieces[-1].strip() else [])
        if sp is None:
            break
        if sp.inner:
            out[-1].append(sp)
            if sp.inner.rstrip().endswith((".", "!", "?")):  # "$$..\geq 2.$$ Therefore, ..."
                out.append([])
        pos = sp.end
    return [s for s in out if s]
