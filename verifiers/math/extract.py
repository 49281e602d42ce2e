"""Finding the final answer in a model response, and the answer in a gold that is written out.

:func:`find_answer` returns ``(answer, how)``; the first rule that finds something wins:

1. ``box``: the last group of ``\\boxed{}``/``\\fbox{}``. Boxes joined only by separators,
   ``and``/``or`` or a few words (``$\\boxed{2}$ and $\\boxed{-3}$``, ``\\boxed{1} papers and
   \\boxed{2} bins``) form one group, read as a list of their distinct contents; boxes with a
   sentence between them do not (``\\boxed{5} was wrong, it is \\boxed{6}`` gives 6). A
   group of several different answers is a list: it fails a single-valued gold.
2. ``bare``: the prediction *is* an answer: no box, no answer phrase, no sentence break, and
   outside its math spans at most three words, none of them prose (``is``, ``the``, ``we``...):
   ``3\\frac12``, ``$\\frac13 $``, ``x\\geq 5``, ``18 dollars``, ``No solution``, ``$1$, $2$``.
   Taken whole: no digits are ever pulled out of it.
3. ``phrase`` in the final sentence (the last sentence with a math span or a digit):
   "final answer (is)", "the answer is", "Answer:", ``####``, ``**Final Answer**``; the answer
   is the math span right after it (several spans joined by separators: ``$12$ and $13$``),
   else the last math span or number after it, else the words after it (``The answer is A.``).
4. ``sentence``: the last math span of the final sentence (``\\[x=\\frac{7}{2}.\\]``, ``the
   area is $12\\sqrt{2}$ square units``), or a number written after it (``The volume of
   $ABCDEFGH$ is 120.``).
5. ``phrase`` anywhere (the last one), then ``bold`` (the last ``**..**`` with a digit or
   math in it), then, if ``fallback_last_number`` is on, ``last_number``: the last number
   written as a number in prose or as a whole math span (``1,000``, ``.4``, ``2/3``), never one
   inside a ``\\frac``, ``\\sqrt``, ``^{}``, ``_{}``, a word (``AZYUK2A``) or a larger span.

Chat-template junk after the answer (``<|im_start|>user``) is cut off first, and doubled
backslashes before commands (``\\\\boxed``) are undone (see :mod:`spans`).

:func:`gold_answer` reads a gold the same way but conservatively: its box group, else the gold
whole when it is bare, else its answer phrase, else the gold whole (prose golds stay prose).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

from dapo_bench.verifiers.math.normalize import TooLarge, clean, squeeze
from dapo_bench.verifiers.math.spans import (
    Span,
    boxes,
    last_box_group,
    math_spans,
    prepare_text,
    sentences,
)
from dapo_bench.verifiers.math.structure import is_label

from dapo_bench.errors import UserError

MAX_TEXT = 100_000  # characters of a model response we scan at all; longer is too_large

_STRONG = re.compile(r"final\s+answer|####", re.IGNORECASE)
_PHRASE = re.compile(r"final\s+answer(?:\s+is)?|answers?\s+(?:is|are)|\banswer\s*:|^\s*answer\b"
                     r"|####", re.IGNORECASE)
_NUMBER = re.compile(r"(?:(?<=\\boxed\{)|(?<![\w.\\^_{:]))-?(?:\d+(?::\d+)+|(?:\d{1,3}(?:,\d{3})+|\d+)"
                     r"(?:\.\d+)?(?:/\d+)?|\.\d+)"
                     r"(?:\\?%)?(?![\d{^_]|\\[a-zA-Z]|[.,]\d)")
_PROSE = frozenset("is are was were the so thus therefore hence we get gives give answer then "  # noqa: SIM905
                   "which that because since find found have has be let this it of to for with "
                   "by from final equals".split())
_WORDS = re.compile(r"[A-Za-z]{2,}")
_CMD = re.compile(r"\\[a-zA-Z]+")
_SEPARATOR = re.compile(r"^(?:\s|,|;|&|\\quad|\\qquad|\\[,;]|\\text\{\s*(?:and|or)\s*\}"
                        r"|\band\b|\bor\b)*$")
_LEAD = re.compile(r"^[\s:*\"'=]*(?:is\b|are\b|:)?[\s:*\"'=]*")
_BOLD = re.compile(r"\*\*([^*\n]{1,200})\*\*")


def _numbers(s: str) -> list[str]:
    return [m.group(0) for m in _NUMBER.finditer(s) if any(c.isdigit() for c in m.group(0))]


def _is_number(s: str) -> bool:
    s = s.strip().rstrip(".,;")
    return bool(s) and _NUMBER.fullmatch(s) is not None and any(c.isdigit() for c in s)


def _filler(sentence: list) -> bool:
    return not any(isinstance(x, Span) or any(c.isdigit() for c in x) for x in sentence)


def _run_back(items: list, k: int) -> str:
    """The span items[k] and the spans before it joined to it only by separators."""
    j = k
    while True:
        if j >= 1 and isinstance(items[j - 1], Span):
            j -= 1
        elif j >= 2 and isinstance(items[j - 2], Span) and _SEPARATOR.match(items[j - 1]):
            j -= 2
        else:
            break
    return " ".join(x.inner if isinstance(x, Span) else x.strip() for x in items[j:k + 1]).strip()


def _run_forward(items: list, k: int) -> str:
    j, n = k, len(items)
    while True:
        if j + 1 < n and isinstance(items[j + 1], Span):
            j += 1
        elif j + 2 < n and isinstance(items[j + 2], Span) and _SEPARATOR.match(items[j + 1]):
            j += 2
        else:
            break
    return " ".join(x.inner if isinstance(x, Span) else x.strip() for x in items[k:j + 1]).strip()


def _names_only(inner: str) -> bool:
    """``$ABCDEFGH$``, ``$N$``, ``$f(x)$``: a span that only names something."""
    try:
        return is_label(squeeze(clean(inner)))
    except TooLarge:
        return False


def _last_token(items: list) -> str | None:
    """The last math span (with the spans joined to it by separators) in *items*; a span that
    only names something (``$ABCDEFGH$``) gives way to a number written after it; with no
    span, the last prose number."""
    number, name = None, None
    for k in range(len(items) - 1, -1, -1):
        x = items[k]
        if isinstance(x, Span):
            if not x.inner.strip():
                continue
            if not _names_only(x.inner):
                return _run_back(items, k)
            if name is None:
                name = k
        elif number is None:
            nums = _numbers(x)
            if nums:
                number = (k, nums[-1])
    if number is not None and (name is None or number[0] > name):
        return number[1]
    return _run_back(items, name) if name is not None else None


def _answer_in(items: list) -> str | None:
    """The answer in the words after an answer phrase (see the module docstring, rule 3)."""
    items = [x for x in items if not (isinstance(x, str) and not x.strip(" \t*:\"'"))]
    if not items:
        return None
    if isinstance(items[0], str):
        items[0] = _LEAD.sub("", items[0])
        if not items[0].strip():
            items = items[1:]
    if items and isinstance(items[0], Span):
        return _run_forward(items, 0) or None
    tok = _last_token(items)
    if tok is not None:
        return tok
    words = " ".join(x for x in items if isinstance(x, str)).strip(" .*\"'")
    return words if len(words) <= 60 and re.search(r"[A-Za-z0-9]", words) else None


def _after(text: str, pos: int) -> str | None:
    """The answer stated right after position *pos* (the end of an answer phrase): in the rest
    of its sentence, or in the next one when the phrase ends its line (``**Final Answer**``)."""
    rest = text[pos:pos + 4000]
    sents = sentences(rest, math_spans(rest))
    if not sents:
        return None
    ans = _answer_in(sents[0])
    if ans is None and len(sents) > 1 and not rest.split("\n", 1)[0].strip(" \t*:"):
        ans = _answer_in(sents[1])
    return ans


def _strong(text: str, spans: list[Span], after: int = 0) -> str | None:
    """The answer after the last "final answer" or ``####`` outside math, if it is past
    *after* (the end of the last box: a later final statement beats an earlier box)."""
    starts = [sp.start for sp in spans]
    for m in reversed(list(_STRONG.finditer(text, after))):
        k = bisect_right(starts, m.start()) - 1
        if k < 0 or spans[k].end <= m.start():  # not inside a math span
            return _after(text, m.end())
    return None


def _phrase_in(sents: list[list], idx: int) -> str | None:
    """The answer after the last answer phrase of sentence *idx* (or in the sentence after it
    when the phrase ends its sentence: ``**Final Answer**`` then a line with the answer)."""
    s = sents[idx]
    for k in range(len(s) - 1, -1, -1):
        if isinstance(s[k], str):
            last = None
            for last in _PHRASE.finditer(s[k]):
                pass
            if last is not None:
                after = [s[k][last.end():], *s[k + 1:]]
                ans = _answer_in(after)
                if ans is None and idx + 1 < len(sents):
                    ans = _answer_in(sents[idx + 1])
                return ans
    return None


def _prose(text: str, spans: list[Span]) -> str:
    out, pos = [], 0
    for sp in spans:
        out.append(text[pos:sp.start])
        pos = sp.end
    out.append(text[pos:])
    return " \x00 ".join(out)


def is_bare(text: str, spans: list[Span]) -> bool:
    """True when *text* is an answer rather than a response (module docstring, rule 2)."""
    if len(text) > 600 or "\\boxed" in text or "\\fbox" in text:
        return False
    prose = _prose(text, spans)
    if _PHRASE.search(prose) or re.search(r"[.!?]\s+[A-Za-z]|\S[ \t]*\n[ \t]*\S"
                                          r"|[A-Za-z]{2}:\s", prose):
        return False
    words = [w.lower() for w in _WORDS.findall(_CMD.sub(" ", prose))]
    words = [w for w in words if w not in ("and", "or")]
    return len(words) <= 3 and not any(w in _PROSE for w in words)


def _bold(text: str) -> str | None:
    for m in reversed(list(_BOLD.finditer(text))):
        inner = m.group(1)
        if any(c.isdigit() for c in inner) or "$" in inner or "\\" in inner:
            sub = math_spans(inner)
            if is_bare(inner, sub):
                return inner.strip()
            return _last_token([x for s in sentences(inner, sub) for x in s])
    return None


def _last_number(sents: list[list]) -> str | None:
    for s in reversed(sents):
        for x in reversed(s):
            if isinstance(x, Span):
                if _is_number(x.inner):
                    return x.inner.strip().rstrip(".,;")
            else:
                nums = _numbers(x)
                if nums:
                    return nums[-1]
    return None


def _joined(group: list[str]) -> str:
    return group[0] if len(group) == 1 else ", ".join(group)


def find_answer(text: str, *, fallback_last_number: bool = True) -> tuple[str | None, str]:
    """``(answer, how)`` for a model response; see the module docstring. ``how`` names the
    rule (``box``, ``bare``, ``phrase``, ``sentence``, ``bold``, ``last_number``, or ``none``)."""
    if not isinstance(text, str) or not text.strip():
        return None, "none"
    text = prepare_text(text)
    found = boxes(text)
    spans = math_spans(text)
    if found:
        ans = _strong(text, spans, found[-1].end)
        return (ans, "phrase") if ans else (_joined(last_box_group(text, found)), "box")
    if is_bare(text, spans):
        return text.strip() or None, "bare"
    ans = _strong(text, spans)
    if ans:
        return ans, "phrase"
    sents = sentences(text, spans)
    for idx in range(len(sents) - 1, -1, -1):
        if not _filler(sents[idx]):
            ans = _phrase_in(sents, idx)
            if ans:
                return ans, "phrase"
            if any(isinstance(x, Span) for x in sents[idx]):
                ans = _last_token(sents[idx])
                if ans:
                    return ans, "sentence"
            break
    for idx in range(len(sents) - 1, -1, -1):
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
        return _joined(last_box_group(text, found))
    spans = math_spans(text)
    if is_bare(text, spans):
        return text.strip()
    ans = _strong(text, spans)
    if ans:
        return ans
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
        return _joined(group)
    if "####" in solution_text:
        return solution_text.rsplit("####", 1)[1].strip()
    raise UserError(f"no \\boxed{{}} or #### answer in solution {solution_text[:60]!r}...")


def last_boxed(text: str) -> str | None:
    """The last box group of *text* as one answer (contents joined by ``, ``), or None."""
    group = last_box_group(prepare_text(text))
    return _joined(group) if group else None
