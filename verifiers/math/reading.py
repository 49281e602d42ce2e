"""Reading one answer out of a piece of a response: the pieces :mod:`extract` and :mod:`marks`
share. Pure Python, no sympy.

- :func:`lead_expression`: the whole expression a piece of prose starts with (``(-1, 6)``,
  ``6+9i``, ``x = 5``, ``-1 + exp(16)``, ``2\\sqrt{3}``), up to the first prose word outside
  braces or the end of the sentence; None when that is not a whole expression (unbalanced
  brackets, no digit and no command). Never a piece of one.
- :func:`last_number`: the last number written *as* a number in prose, each a whole expression: never one
  inside ``\\frac``, ``\\sqrt``, ``^{}``, ``_{}``, a word (``AZYUK2A``), an operation (``2 + 3``
  gives none; ``= 5`` counts: it is a result), a tuple (``(-1, 6)``) or a list (``1, 2 and 3``).
- :func:`answer_in`: the answer stated right after an answer phrase (the math span after it,
  its leading expression, else the last span or number of the sentence, then
  a few words such as ``A`` or ``No solution``; never a word that only comments, ``Right``).
- :func:`after_is`: what a statement says something *is* (``The minimum is 1/2, at x=1``).
- :func:`is_bare`: whether a text *is* an answer rather than a response.

Not covered here: where a response's answer is (:mod:`marks`, :mod:`extract`), what an answer
means (:mod:`normalize`, :mod:`structure`).
"""

from __future__ import annotations

import re

from dapo_bench.verifiers.math.clock import check, ticks
from dapo_bench.verifiers.math.normalize import TooLarge, clean, squeeze
from dapo_bench.verifiers.math.spans import Span
from dapo_bench.verifiers.math.structure import is_label


def may_phrase(s: str) -> bool:
    """A cheap test before :data:`PHRASE` (whose search costs ~0.1 us a character)."""
    return "####" in s or "answer" in s.casefold()


PHRASE = re.compile(r"final\s+answer(?!s)(?:\s+is)?|answers?\s+(?:is|are)|\banswer\s*:|^\s*answer\b"
                    r"|####", re.IGNORECASE)
_NUMBER = re.compile(r"(?:(?<=\\boxed\{)|(?<![\w.\\^_{:]))-?(?:\d+(?::\d+)+|(?:\d{1,3}(?:,\d{3})+|\d+)"
                     r"(?:\.\d+)?(?:/\d+)?|\.\d+)"
                     r"(?:\\?%)?(?![\d{^_]|\\[a-zA-Z]|[.,]\d)")
# a number next to one of these is part of a larger expression (``2 + 3``, ``(-1, 6)``)
_OP_AFTER = re.compile(r"\s*(?:[-+*/^_)}\]|]|,\s*-?\d|(?:,\s*)?(?:and|or)\s+-?\$?\d"
                       r"|\\(?:cdot|times|div|pm)\b)")
PROSE = frozenset("is are was were the so thus therefore hence we get gives give answer then "  # noqa: SIM905
                  "which that because since find found have has be let this it of to for with "
                  "by from final equals".split())
# words after an answer phrase that comment on it rather than state it
_COMMENT = frozenset("right correct wrong incorrect valid invalid verified confirmed consistent "  # noqa: SIM905
                     "indeed clear obvious not as above below follows shown given boxed same "
                     "and or but also still helpful useful accurate reasonable plausible "
                     "complete satisfactory sufficient".split())
_MATH_WORDS = frozenset("sqrt pi exp ln log sin cos tan cot sec csc arcsin arccos arctan sinh "  # noqa: SIM905
                        "cosh tanh infty inf oo and or mod".split())
_WORDS = re.compile(r"[A-Za-z]{2,}")
_CMD = re.compile(r"\\[a-zA-Z]+")
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|[A-Za-z]+|\s+|.", re.DOTALL)
SEPARATOR = re.compile(r"^(?:\s|,|;|&|\\quad|\\qquad|\\[,;]|\\text\{\s*(?:and|or)\s*\}"
                       r"|\band\b|\bor\b)*$")
_LEAD = re.compile(r"^[\s:*\"'=]*(?:is\b|are\b|:)?[\s:*\"'=]*"
                   r"(?:(?:therefore|thus|then|simply|just|equal\s+to|given\s+by)\b[\s:*=]*)?")

_CONNECTIVE = re.compile(r"^[\s:*\"'=]*(?:(?:so|thus|therefore|hence|then|finally|we\s+get|"
                         r"which\s+gives|giving)\b[\s,:*=]*)?", re.IGNORECASE)


def _skip_space_back(s: str, i: int) -> int:
    while i > 0 and s[i - 1].isspace():
        i -= 1
    return i


def _op_before(s: str, i: int) -> bool:
    """Whether what precedes ``s[i]`` (spaces aside) makes the number there part of a larger
    expression: ``{`` (not ``\\boxed{``), an operator, an opening bracket, a backslash, or a
    list before it (``3,``; ``3 and``, ``(1, 2) or``). Scans back over spaces only, so the
    numbers of a text take time linear in its length (a regex anchored at the end of
    each prefix took quadratic time on ``10 + 0 + 0 ...``)."""
    j = _skip_space_back(s, i)
    if j == 0:
        return False
    c = s[j - 1]
    if c == "{":
        return not s.endswith("\\boxed", 0, j - 1)
    if c in "-+*/^_([|\\":
        return True
    if c == ",":
        k = _skip_space_back(s, j - 1)
        return k > 0 and (s[k - 1].isdigit() or s[k - 1] == ")")
    for word in ("and", "or"):
        k = j - len(word)
        if k >= 0 and s.startswith(word, k) and not (k > 0 and _word_char(s[k - 1])):
            k = _skip_space_back(s, k)
            if k > 0 and s[k - 1] == ",":
                k = _skip_space_back(s, k - 1)
            return k > 0 and (s[k - 1].isdigit() or s[k - 1] == ")")
    return False


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


_IN_NUMBER = frozenset("0123456789-:,./\\%")  # the characters a _NUMBER match may hold


def last_number(s: str) -> str | None:
    """The last number of *s* written as a number (module docstring), found from the end: a
    tail of *s*, cut where no number can cross, is searched, then the four times longer tail
    before it, and so on until one holds a number. A regex scan that starts where no match can
    cross finds the whole text's matches from there on, so the answer is the same as a scan of
    the whole text; the time is linear in *s* (each part is searched once), and on a response
    that ends with its number, a few hundred characters."""
    end, width = len(s), 256  # matches starting at or after ``end`` were searched already
    while end > 0:
        lo = max(0, end - width)
        while lo > 0 and s[lo - 1] in _IN_NUMBER:
            lo -= 1
        found = None  # a match that starts before ``end`` ends there (and looks 2 past it)
        check()
        for m in ticks(_NUMBER.finditer(s, lo, min(len(s), end + 8))):  # each holds a digit
            if m.start() >= end:
                break
            if not _OP_AFTER.match(s, m.end()) and not _op_before(s, m.start()):
                found = m.group(0)
        if found is not None:
            return found
        end, width = lo, width * 4
    return None


def is_number(s: str) -> bool:
    s = s.strip().rstrip(".,;")
    return bool(s) and _NUMBER.fullmatch(s) is not None and any(c.isdigit() for c in s)


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s.replace("\\{", "").replace("\\}", ""):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth < 0:
            return False
    return depth == 0


def lead_expression(s: str) -> str | None:
    """The whole expression *s* starts with (see the module docstring), or None."""
    s = s.lstrip(" \t*")
    end, depth, prev = 0, 0, ""
    for m in _TOKEN.finditer(s[:400]):
        tok = m.group(0)
        if depth == 0:
            if tok.isalpha() and len(tok) >= 2 and tok.lower() not in _MATH_WORDS:
                break
            if tok in ".!?;" and not s[m.end():m.end() + 1].isdigit():
                break
            if (tok == "$" or "\n" in tok or (tok == ":" and not prev[-1:].isdigit())
                    or not tok.isascii()):  # "1,000.99€", "90°": a unit, not the expression
                break
        depth += tok == "{"
        depth -= tok == "}"
        if not tok.isspace():
            end, prev = m.end(), tok
    expr = s[:end].strip()
    while True:  # trailing separators, connectors and markdown
        cut = re.sub(r"(?:[\s,;*=]|\b(?:and|or)\b)+$", "", expr)
        if cut == expr:
            break
        expr = cut
    while expr.endswith((")", "]")) and not _balanced(expr):  # "(so it is 5)": the ")" closes prose
        expr = expr[:-1].rstrip()
    if not expr or not _balanced(expr) or not re.search(r"\d|\\[a-zA-Z]", expr):
        return None
    return expr


def run_back(items: list, k: int) -> str:
    """The span items[k] and the spans before it joined to it only by separators."""
    j = k
    while True:
        if not (k - j) % 512:
            check()
        if j >= 1 and isinstance(items[j - 1], Span):
            j -= 1
        elif j >= 2 and isinstance(items[j - 2], Span) and SEPARATOR.match(items[j - 1]):
            j -= 2
        else:
            break
    return " ".join(x.inner if isinstance(x, Span) else x.strip() for x in items[j:k + 1]).strip()


def _run_forward(items: list, k: int) -> str:
    j, n = k, len(items)
    while True:
        if not (j - k) % 512:
            check()
        if j + 1 < n and isinstance(items[j + 1], Span):
            j += 1
        elif j + 2 < n and isinstance(items[j + 2], Span) and SEPARATOR.match(items[j + 1]):
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


def last_token(items: list) -> str | None:
    """The last math span (with the spans joined to it by separators) in *items*; a span that
    only names something (``$ABCDEFGH$``) gives way to a number written after it; with no
    span, the last prose number (:func:`last_number`)."""
    number, name = None, None
    for k in ticks(range(len(items) - 1, -1, -1)):
        x = items[k]
        if isinstance(x, Span):
            if not x.inner.strip() or x.inner.strip() == "\\$":  # "cost $\\$$23.40"
                continue
            if not _names_only(x.inner):
                return run_back(items, k)
            if name is None:
                name = k
        elif number is None:
            num = last_number(x)
            if num is not None:
                number = (k, num)
    if number is not None and (name is None or number[0] > name):
        return number[1]
    return run_back(items, name) if name is not None else None


def words_answer(items: list) -> str | None:
    """A short answer in words (``A``, ``No solution``), never a comment (``Right, ...``)."""
    words = " ".join(x for x in items if isinstance(x, str)).strip(" .*\"'")
    first = re.match(r"[A-Za-z]+", words)
    if (len(words) > 60 or not re.search(r"[A-Za-z0-9]", words)
            or (first and first.group(0).lower() in _COMMENT | PROSE)):
        return None
    return words


def answer_in(items: list, *, leading: bool = False) -> str | None:
    """The answer in the words after an answer phrase (module docstring). ``leading``: only
    an answer at the start (a span, or the expression the words start with, after ``So,`` or
    ``Thus,``), never one searched for further on."""
    items = [x for x in items if not (isinstance(x, str) and not x.strip(" \t*:\"'"))]
    if not items:
        return None
    if isinstance(items[0], str):
        items[0] = (_CONNECTIVE if leading else _LEAD).sub("", items[0])
        if not items[0].strip(" \t*:\"'"):
            items = items[1:]
    if items and isinstance(items[0], Span):
        return _run_forward(items, 0) or None
    if not items:
        return None
    lead = lead_expression(items[0])
    if lead is not None or leading:
        return lead
    tok = last_token(items)
    return tok if tok is not None else words_answer(items)


_IS_END = re.compile(r"\b(?:is|are|equals|be)\s*:?\s*$|=\s*$", re.IGNORECASE)
_IS_MID = re.compile(r"\b(?:is|are|equals|be)\s*:?\s+|=\s*", re.IGNORECASE)


def after_is(items: list) -> str | None:
    """The answer a statement gives right after its first ``is``/``are``/``=``: ``The minimum
    value is $\\frac{1}{2}$, attained at $x=1$`` gives ``\\frac{1}{2}``, ``The minimum value is
    1/2, attained at x=1`` gives ``1/2``; None when no whole expression follows it."""
    for k, x in enumerate(items):
        if isinstance(x, Span):
            return None  # a span before any "is": the sentence is not "<name> is <answer>"
        if _IS_END.search(x) and k + 1 < len(items) and isinstance(items[k + 1], Span):
            return _run_forward(items, k + 1) or None
        m = _IS_MID.search(x)
        if m:
            return lead_expression(x[m.end():])
    return None


def prose_of(text: str, spans: list[Span]) -> str:
    out, pos = [], 0
    for sp in spans:
        out.append(text[pos:sp.start])
        pos = sp.end
    out.append(text[pos:])
    return " \x00 ".join(out)


def is_bare(text: str, spans: list[Span]) -> bool:
    """True when *text* is an answer rather than a response: no box, no answer phrase, no
    sentence break, and outside its math spans at most three words, none of them prose."""
    if len(text) > 600 or "\\boxed" in text or "\\fbox" in text:
        return False
    prose = prose_of(text, spans)
    if PHRASE.search(prose) or re.search(r"[.!?]\s+[A-Za-z]|\S\s*\n\s*\S"
                                         r"|[A-Za-z]{2}:\s", prose):
        return False
    words = [w.lower() for w in _WORDS.findall(_CMD.sub(" ", prose))]
    words = [w for w in words if w not in ("and", "or")]
    return len(words) <= 3 and not any(w in PROSE for w in words)


def mathy(ans: str) -> bool:
    """An answer that states math (a digit, a command, an operator) or one letter (``A``)."""
    core = ans.strip(" ()$.*")
    return bool(re.search(r"[\d\\=+^/<>]", ans)) or (len(core) == 1 and core.isalpha())
