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
from dataclasses import dataclass

_CHAT_END = re.compile(r"<\|(?:im_start|im_end|endoftext|eot_id|end_of_text)\|>")
_DOUBLED = re.compile(
    r"(?<!\\)\\\\(?=(?:boxed|fbox|frac|dfrac|tfrac|cfrac|sqrt|left|right|pi|leq?|geq?|lt|gt|neq?|cdot"
    r"|times|text|textbf|mathrm|in|infty|cup|cap|pm|mp|quad|qquad|approx|begin|end)(?![a-zA-Z]))")
_ENV = re.compile(r"\\begin\{(align|equation|gather|eqnarray|multline|displaymath)(\*?)\}")
_BOX = re.compile(r"\\(?:boxed|fbox)(?![a-zA-Z])")


def prepare_text(text: str) -> str:
    m = _CHAT_END.search(text, 1)
    if m:
        text = text[:m.start()]
    if "\\\\" in text:
        text = _DOUBLED.sub(r"\\", text)
    return text


@dataclass(frozen=True)
class Span:
    start: int  # of the opening delimiter
    end: int  # after the closing delimiter
    inner: str


def _close(text: str, i: int, opener: str, closer: str, find) -> tuple[int, bool]:
    """(index of the closer of the inline span opened at *i*, or -1; broken). A span padded
    by a space whose body breaks a line (``$ \\n 9 \\n $``) is *broken*: neither math nor
    prose, as math-verify reads it."""
    padded = text[i + len(opener):i + len(opener) + 1].isspace()
    j = i + len(opener)
    while True:
        j = find(closer, j)
        if j < 0:
            return -1, False
        if closer == "$" and text[j - 1] == "\\":  # \$ inside math: an escaped dollar
            j += 1
            continue
        body = text[i + len(opener):j]
        if "\n" in body:
            return (j, True) if padded and body.strip() else (-1, False)
        if not body.strip() or (closer == "$" and text[j - 1].isspace() and not padded):
            return -1, False  # "$10,200 + $255": the first $ is currency
        return j, False


def _finder(text: str):
    """``text.find`` that remembers where a closer no longer occurs (linear time on texts
    full of unclosed openers)."""
    absent: dict[str, int] = {}

    def find(sub: str, start: int) -> int:
        if start >= absent.get(sub, len(text) + 1):
            return -1
        k = text.find(sub, start)
        if k < 0:
            absent[sub] = min(start, absent.get(sub, start))
        return k

    return find


def math_spans(text: str) -> list[Span]:
    """Math spans in order; a broken span (see :func:`_close`) has an empty ``inner``."""
    out, i, n, find = [], 0, len(text), _finder(text)
    while i < n:
        j = min((k for k in (find("$", i), find("\\", i)) if k >= 0), default=-1)
        if j < 0:
            break
        if text[j] == "\\":
            two = text[j:j + 2]
            if two == "\\[":
                k = find("\\]", j + 2)
                if k >= 0:
                    out.append(Span(j, k + 2, text[j + 2:k]))
                    i = k + 2
                    continue
            elif two == "\\(":
                k, broken = _close(text, j, "\\(", "\\)", find)
                if k >= 0:
                    out.append(Span(j, k + 2, "" if broken else text[j + 2:k]))
                    i = k + 2
                    continue
            elif two == "\\b" and (m := _ENV.match(text, j)):
                end = f"\\end{{{m.group(1)}{m.group(2)}}}"
                k = find(end, m.end())
                if k >= 0:
                    out.append(Span(j, k + len(end), text[m.end():k]))
                    i = k + len(end)
                    continue
            i = j + 2
            continue
        if text.startswith("$$", j):
            k = find("$$", j + 2)
            if k >= 0:
                out.append(Span(j, k + 2, text[j + 2:k]))
                i = k + 2
                continue
            i = j + 2
            continue
        k, broken = _close(text, j, "$", "$", find)
        if k >= 0:
            out.append(Span(j, k + 1, "" if broken else text[j + 1:k]))
            i = k + 1
        else:
            i = j + 1
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


def boxes(text: str) -> list[Box]:
    out = []
    for m in list(_BOX.finditer(text))[-MAX_BOXES:]:
        i = m.end()
        while i < len(text) and text[i] in " \t\n":
            i += 1
        if i < len(text) and text[i] == "{":
            k = braced(text, i)
            if k > 0 and text[i + 1:k - 1].strip():
                out.append(Box(m.start(), k, text[i + 1:k - 1].strip()))
        elif i > m.end():  # "\boxed 5": one token, up to a space or a math delimiter
            t = re.match(r"[^\s$]+", text[i:])
            if t:
                out.append(Box(m.start(), i + t.end(), t.group(0).rstrip(".")))
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
    for sp in [*spans, None]:
        prose = text[pos:sp.start] if sp else text[pos:]
        last = 0
        for m in _SENT_END.finditer(prose):
            if prose[last:m.start()].strip():
                out[-1].append(prose[last:m.start()])
            out.append([])
            last = m.end()
        if prose[last:].strip():
            out[-1].append(prose[last:])
        if sp is None:
            break
        if sp.inner:
            out[-1].append(sp)
            if sp.inner.rstrip().endswith((".", "!", "?")):  # "$$..\geq 2.$$ Therefore, ..."
                out.append([])
        pos = sp.end
    return [s for s in out if s]
