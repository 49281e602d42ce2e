"""Finding the final answer in a model response, and the answer in a gold that is written out.

:func:`find_answer` returns ``(answer, how)``; ``how`` is the verdict's ``answer_from``. The
first of these that finds something wins:

1. A **mark** (:mod:`marks`): ``box``, ``heading`` (``# Answer``, ``**Final answer:**``,
   ``Answer: 3/4``), ``####`` or ``phrase`` ("final answer is"). When several are present,
   the one that comes last in the response wins, whatever its kind.
2. ``bare``: the prediction *is* an answer: no box, no answer phrase, no sentence break, and
   outside its math spans at most three words, none of them prose (``3\\frac12``,
   ``$\\frac13 $``, ``x\\geq 5``, ``18 dollars``, ``No solution``). Taken whole.
3. ``last_line``: the last line of a response of several lines, when it is one whole
   expression alone (``7i - 2``, ``$\\frac{3}{4}$``; not ``Right. $x=2$``).
4. The final sentence (the last with a math span or a digit, before a check that opens in the
   last four sentences: ``Let's check: ...``, ``We can verify that ...``): an answer phrase in
   it ("the answer is", "Answer:") or in one of the two sentences before it (``So the answer
   is $12$. Right. And the sum of its digits is $3$.`` gives 12; not when ``That's our
   answer.`` follows the final sentence, which then is the answer) gives ``phrase``; else
   ``sentence``: the count it states (``So there
   are 28 ways to choose 2 cooks from 8 people``), else its last math span
   (``the area is $12\\sqrt{2}$ square units``; a span that only names something gives way to a
   number after it), else, with no span, the expression after its last ``is`` (``the midpoint
   is (-1,6)``).
5. An answer phrase anywhere (the last), then ``bold`` (the last ``**..**`` with a digit or
   math in it), then, if ``fallback_last_number`` is on, ``last_number``: the last number
   written as a whole number (:func:`reading.last_number`: never one inside ``\\sqrt{53}``,
   ``(-1, 6)``, ``\\frac{3}{4}``, ``2 + 3``, or a list ``1, 2 and 3``), else ``none``.

An unmarked final statement ``quantity = value`` (rules 3 and 4) gives its value
(:func:`value_of`: ``f(1000)=1016`` gives 1016; ``x = 5`` and ``x-2y+z-1=0`` stay whole).
What a response marks (rule 1) is never cut.

Chat-template junk after the answer (``<|im_start|>user``) is cut off first, and doubled
backslashes before commands (``\\\\boxed``) are undone (see :mod:`spans`).

Not covered: answers stated only in words far from any marker, the first of several answers
when a later one is marked, and languages other than English for headings and phrases.

:func:`gold_answer` reads a gold the same way but conservatively: its box group, else the gold
whole when it is bare, else its marked answer or answer phrase, else the gold whole (prose
golds stay prose).
"""

from __future__ import annotations

import re
from functools import lru_cache

from dapo_bench.verifiers.base import answer_text
from dapo_bench.verifiers.math.clock import check, ticks
from dapo_bench.verifiers.math.marks import box_stands, joined, marked_answer
from dapo_bench.verifiers.math.reading import (
    PHRASE,
    answer_in,
    is_bare,
    is_number,
    last_number,
    last_token,
    lead_expression,
    may_phrase,
)
from dapo_bench.verifiers.math.spans import (
    Span,
    boxes,
    last_box_group,
    math_spans,
    prepare_text,
    sentences,
)
from dapo_bench.verifiers.math.statement import (
    after_spans,
    counted,
    no_span_statement,
    subject_count,
    value_of,
)

from dapo_bench.errors import UserError

MAX_TEXT = 4_000_000  # characters of a response read (about 1M tokens); longer is too_large

_BOLD = re.compile(r"\*\*([^*\n]{1,200})\*\*")
_SPAN_ONLY = re.compile(r"[\s.,;:!]*")



CHECK_WINDOW = 4  # sentences from the end in which a check of the answer may open
PHRASE_WINDOW = 2  # sentences before the final one in which an answer phrase still counts
_CHECK = re.compile(r"[\s,.*]*(?:(?:right|ok|okay|yes|and|so|now|then|finally)[\s,.!]+)*"
                    r"(?:(?:let's|let\s+us|we\s+can|you\s+can|we\s+could|i\s+can|to)\s+"
                    r"(?:(?:also|now|quickly|just|easily|then)\s+)*(?:double[- ]?)?"
                    r"(?:check|verify|confirm)|check\s*:|checking\b|verification\b)",
                    re.IGNORECASE)

_BACKREF = re.compile(r"[\s,.*]*(?:(?:and|so|right|yes)[\s,.!]+)*(?:that|this|which)(?:'s|\s+is)\s+"
                      r"(?:our|the|my)\s+(?:final\s+)?answer\b", re.IGNORECASE)


_DIGIT = re.compile(r"\d")


_ASKS = re.compile(r"[\s*#>]*(?:evaluate|compute|calculate|find|simplify|determine|solve|express|"
                   r"what\s+(?:is|are)|how\s+(?:many|much))\b", re.IGNORECASE)


def _asks(sentence: list) -> bool:
    """A sentence that sets a task rather than states a result (``Evaluate $(1+2i)6-3i$.``,
    ``What is $(\\frac12)^{100} \\cdot 2^{100}$?``: a model echoing or inventing a problem)."""
    return bool(sentence) and isinstance(sentence[0], str) and bool(_ASKS.match(sentence[0]))


def _filler(sentence: list) -> bool:
    return not any(isinstance(x, Span) or _DIGIT.search(x) for x in sentence)


def _phrase_in(sents: list[list], idx: int, follow: bool = True,
               phrases: bool = True) -> str | None:
    """The answer after the last answer phrase of sentence *idx* (or, with ``follow``, in the
    sentence after it when the phrase ends its sentence with ``:``). ``phrases=False``: the
    response holds no phrase at all (:func:`reading.may_phrase`), so None without a look."""
    if not phrases:
        return None
    s = sents[idx]
    for k in range(len(s) - 1, -1, -1):
        if isinstance(s[k], str) and may_phrase(s[k]):
            last = None
            for last in PHRASE.finditer(s[k]):
                pass
            if last is not None:
                after = [s[k][last.end():], *s[k + 1:]]
                ans = answer_in(after)
                if (ans is None and follow and idx + 1 < len(sents)
                        and s[k].rstrip(" *").endswith(":")):
                    ans = answer_in(sents[idx + 1])
                return ans
    return None


def _last_line(text: str) -> str | None:
    """The last line of a response of several lines when it is an answer alone: bare (as
    :func:`reading.is_bare`: no prose) and stating math (a digit or a command)."""
    body = text.rstrip()
    if "\n" not in body:
        return None
    line = body.rsplit("\n", 1)[1].strip()
    if line.startswith("**") and line.endswith("**") and len(line) > 4:
        line = line[2:-2].strip()
    line = re.sub(r"^A:\s*", "", line)  # "Q: ... A: 18", the few-shot GSM8K form
    if not line or len(line) > 200 or not re.search(r"\d|\\[a-zA-Z]", line):
        return None
    spans = math_spans(line)
    if spans:  # math spans and separators only: "$x = 5$", "$1$, $2$"
        prose = "".join(line[a.end:b.start] for a, b in zip([Span(0, 0, ""), *spans], spans))
        prose += line[spans[-1].end:]
        return line.rstrip(".").strip() if _SPAN_ONLY.fullmatch(prose) else None
    expr = lead_expression(line)  # one whole expression and nothing else: "7i - 2"
    return expr if expr is not None and expr == line.rstrip(". ") else None


def _bold(text: str) -> str | None:
    for m in ticks(reversed(list(_BOLD.finditer(text)))):
        inner = m.group(1)
        if any(c.isdigit() for c in inner) or "$" in inner or "\\" in inner:
            sub = math_spans(inner)
            if is_bare(inner, sub):
                return inner.strip()
            return last_token([x for s in sentences(inner, sub) for x in s])
    return None


def _last_number(sents: list[list]) -> str | None:
    for s in ticks(reversed(sents)):
        for x in reversed(s):
            if isinstance(x, Span):
                if is_number(x.inner):
                    return x.inner.strip().rstrip(".,;")
            elif _DIGIT.search(x):
                num = last_number(x)
                if num is not None:
                    return num
    return None


def _check_start(sents: list[list]) -> int | None:
    """The sentence that opens a check of the answer among the last :data:`CHECK_WINDOW`
    (``Let's check: ...``, ``We can verify that ...``, ``To check, ...``), when sentences come
    before it: the answer is stated before the check, not in it."""
    for idx in range(len(sents) - 1, max(len(sents) - 1 - CHECK_WINDOW, 0), -1):
        head = next((x for x in sents[idx] if isinstance(x, str) and x.strip()), "")
        if sents[idx] and isinstance(sents[idx][0], str) and _CHECK.match(head):
            return idx
    return None


def _final_statement(sents: list[list], end: int,
                     phrases: bool = True) -> tuple[str, str] | None:
    """Rule 4 on ``sents[:end]``: the final sentence's answer phrase, else an answer phrase in
    the :data:`PHRASE_WINDOW` sentences before it (``So the answer is $1$. Right. $1+...+10$
    leaves a remainder of 1``: a later statement that restates or checks does not override
    what the response called its answer), else what the final sentence states.
    ``phrases``: as :func:`_phrase_in`'s."""
    pointed = False  # "That's our answer." after it: the final sentence is the answer
    for idx in ticks(range(end - 1, -1, -1)):
        ans = _phrase_in(sents, idx, phrases=phrases)
        if _filler(sents[idx]):  # no math; but "So the answer is B." states one
            if ans:
                return ans, "phrase"
            pointed = pointed or (phrases and bool(_BACKREF.match(" ".join(sents[idx]))))
            continue
        if ans:
            return value_of(ans), "phrase"
        if _asks(sents[idx]):  # a task set, not a result: the final statement is before it
            continue
        for k in range(idx - 1, max(idx - 1 - PHRASE_WINDOW * (not pointed), -1), -1):
            ans = _phrase_in(sents, k, follow=False, phrases=phrases)  # "**Answer:**" then prose
            if ans:
                return value_of(ans), "phrase"
        ans = counted(sents[idx]) or no_span_statement(after_spans(sents[idx]))
        if ans is None and any(isinstance(x, Span) for x in sents[idx]):
            ans = last_token(sents[idx])
            ans = subject_count(sents[idx], ans) or ans
        return (value_of(ans), "sentence") if ans else None
    return None


def find_answer(text: str, *, fallback_last_number: bool = True) -> tuple[str | None, str]:
    """``(answer, how)`` for a model response; see the module docstring. ``how`` names the
    rule (``box``, ``heading``, ``####``, ``phrase``, ``bare``, ``last_line``, ``sentence``,
    ``bold``, ``last_number``, or ``none``)."""
    if not isinstance(text, str) or not text.strip():
        return None, "none"
    text = prepare_text(answer_text(text))  # the answer, never the thinking (every path alike)
    found = boxes(text)
    ans = box_stands(text, found)
    if ans:  # nothing after the last box can mark another answer: no other rule can win
        return ans, "box"
    check()  # (clock: each phase below is linear; the long loops check as they go)
    spans = math_spans(text)
    marked = marked_answer(text, spans, found)
    if marked:
        return marked
    if is_bare(text, spans):  # (markdown bold around it is no part of it: "**2.78 m**")
        return text.strip().strip("*").strip() or None, "bare"
    check()
    ans = _last_line(text)
    if ans:
        return value_of(ans), "last_line"
    sents = sentences(text, spans)
    phrases = may_phrase(text)
    start = _check_start(sents)
    check()
    stated = (_final_statement(sents, start, phrases) if start is not None else None) or \
        _final_statement(sents, len(sents), phrases)
    if stated:
        return stated
    check()
    for idx in ticks(range(len(sents) - 1, -1, -1)) if phrases else ():
        ans = _phrase_in(sents, idx)
        if ans:
            return ans, "phrase"
    ans = _bold(text)
    if ans:
        return ans, "bold"
    if fallback_last_number:
        ans = _last_number(sents)
        if ans:
            return ans, "last_number"
    return None, "none"


def extract_answer(text: str, *, fallback_last_number: bool = True) -> str | None:
    """The final answer of a model response (see the module docstring), or None."""
    return find_answer(text, fallback_last_number=fallback_last_number)[0]


@lru_cache(maxsize=8192)
def gold_answer(gold: str) -> str:
    """The answer a gold string states (module docstring, last paragraph)."""
    text = prepare_text(gold)
    found = boxes(text)
    if found:
        return joined(last_box_group(text, found))
    spans = math_spans(text)
    if is_bare(text, spans):
        return text.strip()
    marked = marked_answer(text, spans, [])
    if marked:
        return marked[0]
    sents = sentences(text, spans)
    for idx in range(len(sents) - 1, -1, -1):
        ans = _phrase_in(sents, idx)
        if ans:
            return ans
    return text.strip()


def extract_gold_from_solution(solution_text: str) -> str:
    """The gold answer inside a worked solution: its last box group (MATH, Minerva), else the
    text after GSM8K's ``####``. Raises UserError when there is neither."""
    group = last_box_group(prepare_text(solution_text))
    if group:
        return joined(group)
    if "####" in solution_text:
        return solution_text.rsplit("####", 1)[1].strip()
    raise UserError(f"no \\boxed{{}} or #### answer in solution {solution_text[:60]!r}...")


def last_boxes(text: str, k: int) -> str | None:
    """The contents of the last *k* boxes of a response as one list answer, when it has that
    many (an answer of several parts boxed apart: ``the maximum is \\boxed{2}`` ... ``the
    minimum is \\boxed{1}``), else None."""
    found = boxes(prepare_text(text))
    return ", ".join(b.inner for b in found[-k:]) if k > 1 and len(found) >= k else None


def last_boxed(text: str) -> str | None:
    """The last box group of *text* as one answer (contents joined by ``, ``), or None."""
    group = last_box_group(prepare_text(text))
    return joined(group) if group else None
