"""Marked answers: the answers a response points at, and which of them wins.

A *mark* (its name is the verdict's ``answer_from``):

- ``box``: the last group of ``\\boxed{}``/``\\fbox{}`` (:func:`spans.last_box_group`).
- ``heading``: an answer heading or a labelled answer line, at the start of a line: ``# Answer``
  (PRM800K), ``## Final Answer``, ``**Final Answer**``, ``**Final answer:** (-1, 6)``,
  ``Answer: 3/4``, ``Final Answer: ...`` (Minerva). Its answer is the rest of its line, or the
  next paragraph when the heading ends its line: taken whole when it is bare (``7i - 2``,
  ``No solution``), else read like a phrase's.
- ``####``: GSM8K's final line; its answer is the rest of the line, whole (``#### 6+9i`` gives
  ``6+9i``, never its last number).
- ``phrase``: "final answer is" / "final answer:" in a sentence, followed in that sentence by
  the answer (:func:`reading.answer_in`); "final answer" alone (``To get the final answer, we
  ...``) marks nothing. After ``The final answer is:`` ending its line, the next paragraph.
  The weaker phrases ("the answer is", "our answer:") are not marks: chatty solutions write
  them about intermediate results and checks (``we can check our answer: $\\sqrt{81}=9$``);
  :mod:`extract` reads them in the final sentence, after the marks.

**The mark that comes last in the response wins**, whatever its kind. A response ends with its
answer; what it wrote before is work, a first try, or a check. So a ``####`` line after a box
wins (a GSM8K-trained model boxes a step, then writes its final line), and a box after a
``####`` line wins (a model that corrected itself), where a fixed order of kinds gets one of
the two wrong. Two guards keep this from taking comments: a phrase or heading counts only when
what it marks states math (a digit, a command, an operator, or one letter: :func:`reading.mathy`)
or, for a heading, is a bare answer; and a phrase whose sentence ends right after it (``so that
is our final answer. Right, ...``) marks nothing. So ``\\boxed{5}. The answer is correct.``
is still 5.

Not covered: answers in other languages' headings (``答案``), and headings that are not at the
start of a line; such responses fall through to the unmarked rules of :mod:`extract`.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import deque
from typing import TypeGuard

from dapo_bench.verifiers.math.clock import ticks
from dapo_bench.verifiers.math.reading import after_is, answer_in, is_bare, mathy, words_answer
from dapo_bench.verifiers.math.spans import Box, Span, last_box_group, math_spans, sentences

_HEADING = re.compile(r"^[ \t>]*(?P<hash>#{1,6}[ \t]*)?(?P<b1>\*\*|__)?[ \t]*(?:the[ \t]+)?"
                      r"(?:final[ \t]+)?answers?[ \t]*(?P<c1>:)?[ \t]*(?P<b2>\*\*|__)?[ \t]*"
                      r"(?P<c2>:)?[ \t]*", re.IGNORECASE | re.MULTILINE)
_HASHES = re.compile(r"####[ \t]*")
_STRONG = re.compile(r"final\s+answer(?!s)(?:\s+is)?", re.IGNORECASE)  # "answers": not one mark
_VERB = re.compile(r"[\s*]*(?:is|are|was|would\s+be|will\s+be|:|=)", re.IGNORECASE)
_OPEN_END = re.compile(r"[\s*_]*(?:(?:is|are)\b[\s*_]*:?|:)[\s*_]*", re.IGNORECASE)
_SAYS = re.compile(r"[A-Za-z ,]{0,60}?\b(?:is|are)\s+([A-Za-z]+(?:\s+[A-Za-z]+)?)\s*\.?",
                   re.IGNORECASE)
TRIES = 16  # marks of one kind read from the end at most: bounds the work on long responses


def joined(group: list[str]) -> str:
    return group[0] if len(group) == 1 else ", ".join(group)


def _outside(spans: list[Span], starts: list[int], pos: int) -> bool:
    k = bisect_right(starts, pos) - 1
    return k < 0 or spans[k].end <= pos


def _paragraph(text: str, pos: int) -> str:
    """From *pos* (blank lines skipped) to the next blank line; at most 2,000 characters."""
    while pos < len(text) and text[pos].isspace():
        pos += 1
    end = text.find("\n\n", pos, pos + 2000)
    return text[pos:end if end >= 0 else pos + 2000]


def line_answer(block: str) -> str | None:
    """The answer a heading or ``####`` marks: *block* whole when it is bare, else what its
    first sentence says something *is* (:func:`reading.after_is`), else the answer at its
    start (:func:`reading.answer_in` with ``leading``: ``Answer: We have 3 apples and 4
    pears, ...`` at the top of a response marks nothing); only when that states math."""
    s = block.strip().strip("*").strip()  # "**Answer: 5**": the bold around the heading
    spans = math_spans(s)
    if s and is_bare(s, spans):
        return s.rstrip(".").strip() or None
    sents = sentences(s, spans)
    ans = (after_is(sents[0]) or answer_in(sents[0], leading=True)) if sents else None
    if ans and mathy(ans):
        return ans
    said = _SAYS.fullmatch(s)  # "## Answer\nThe function is even.": one sentence, a word or two
    return words_answer([said.group(1)]) if said and len(sents) == 1 else None


def _after(text: str, pos: int) -> str | None:
    """The answer a phrase ending at *pos* marks (module docstring), or None."""
    rest = text[pos:pos + 4000]
    if re.match(r"[ \t*]*[.!?](?:\s|$)", rest):  # its sentence ended: what follows is not it
        return None
    line = rest.split("\n", 1)[0]
    if _OPEN_END.fullmatch(line):  # "The final answer is:" then the answer below
        return line_answer(_paragraph(text, pos + len(line)))
    if not line.strip(" \t*_:"):
        return None  # "final answer" ending its line: a heading (or nothing)
    sents = sentences(rest, math_spans(rest))
    ans = answer_in(sents[0]) if sents else None
    return ans if ans and mathy(ans) else None


def _headings(text: str, spans: list[Span], starts: list[int], pos: int) -> deque[re.Match]:
    out: deque = deque(maxlen=TRIES)  # the last TRIES of them
    for m in ticks(_HEADING.finditer(text, pos)):
        eol = text.find("\n", m.end())
        rest = text[m.end():eol if eol >= 0 else len(text)]
        if not _outside(spans, starts, m.start()):
            continue
        if (m.group("hash") or (m.group("b1") and m.group("b2")) or m.group("c1")
                or m.group("c2") or not rest.strip(" \t*_")):
            out.append(m)
    return out


def _heading_answer(text: str, m: re.Match) -> str | None:
    eol = text.find("\n", m.end())
    rest = text[m.end():eol if eol >= 0 else len(text)]
    if not rest.strip(" \t*_:"):
        return line_answer(_paragraph(text, m.end()))
    ans = line_answer(rest)
    if ans and not (m.group("c1") or m.group("c2")) and not mathy(ans):
        return None  # "### Answer Explanation": a title, not "Answer: Explanation"
    return ans


def _hashes_answer(text: str, m: re.Match) -> str | None:
    eol = text.find("\n", m.end())
    return line_answer(text[m.end():eol if eol >= 0 else len(text)])


def _phrase_answer(text: str, m: re.Match) -> str | None:
    if not m.group(0).lower().endswith("is") and not _VERB.match(text, m.end()):
        return None  # "To get the final answer, we ...": not a statement of it
    return _after(text, m.end())


def box_stands(text: str, found: list[Box]) -> str | None:
    """The last box group's answer when nothing after the last box can mark another (no
    ``####``, no "answer"): then it is the marked answer, and no math span need be read."""
    if not found:
        return None
    tail = text[found[-1].end:]
    if "####" in tail or "answer" in tail.casefold():
        return None
    return joined(last_box_group(text, found))


_MARKUP_ONLY = re.compile(r"[\s#*_=~`>|.:,;!?()\[\]{}-]*")


def states(ans: str | None) -> TypeGuard[str]:
    """An answer that says something: not markup or punctuation alone (``##``, ``**``,
    ``---``: what a degenerate tail puts after a heading)."""
    if not ans:
        return False
    return not _MARKUP_ONLY.fullmatch(ans)


def marked_answer(text: str, spans: list[Span], found: list[Box]) -> tuple[str, str] | None:
    """``(answer, mark)`` of the last mark in *text* (module docstring), or None. The marks
    are read from the last one back, and only until one gives an answer; a box always gives
    one, so only what follows the last box is searched."""
    ans = box_stands(text, found)
    if ans:
        return ans, "box"
    pos = found[-1].end if found else 0  # a box always gives an answer: only later marks count
    starts = [sp.start for sp in spans]
    heads = _headings(text, spans, starts, pos)
    ranges = [(m.start(), m.end()) for m in heads]
    hashes = deque((m for m in ticks(_HASHES.finditer(text, pos))
                    if _outside(spans, starts, m.start())), maxlen=TRIES)
    phrases = deque((m for m in ticks(_STRONG.finditer(text, pos)) if _outside(spans, starts,
                     m.start()) and not any(a <= m.start() < b for a, b in ranges)), maxlen=TRIES)
    marks: list[tuple[int, str, re.Match | None]] = [(m.start(), "heading", m) for m in heads]
    marks += [(m.start(), "####", m) for m in hashes]
    marks += [(m.start(), "phrase", m) for m in phrases]
    if found:
        marks.append((found[-1].start, "box", None))
    read = {"heading": _heading_answer, "####": _hashes_answer, "phrase": _phrase_answer}
    for _, how, m in sorted(marks, key=lambda c: c[0], reverse=True):
        if how == "box":
            ans = joined(last_box_group(text, found))
        else:
            assert m is not None  # only the box's mark has no match
            ans = read[how](text, m)
        if states(ans):
            return ans, how
    return None
