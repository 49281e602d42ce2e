"""What a final sentence states: the value of ``quantity = value``, a count, the expression
after its last ``is``. :mod:`extract` decides which sentence is final and in what order its
rules apply; these read one sentence (lists of prose strings and spans, :func:`spans.sentences`).
Pure Python, linear in the sentence; the long loops check the item's deadline (:mod:`clock`).
"""

from __future__ import annotations

import re

from dapo_bench.verifiers.math.clock import ticks
from dapo_bench.verifiers.math.normalize import MAX_ANSWER, TooLarge, clean, squeeze
from dapo_bench.verifiers.math.reading import PHRASE, is_number, lead_expression
from dapo_bench.verifiers.math.spans import Span
from dapo_bench.verifiers.math.structure import named_quantity, unknowns

_RELATION = re.compile(r"\\(?:leq?|geq?|neq?|approx|equiv|pmod|bmod|mod|in|subset|sim|cong)(?![a-zA-Z])"
                       r"|[<>,;!]|\band\b|\bor\b|\\begin")
_NAME = re.compile(r"\s*[A-Za-z](?:_\{?\w+\}?)?\s*")  # x, a_1, a_{10}: what "x = 3" names
_IS = re.compile(r"\b(?:is|are|equals|be)\s+|=\s*")
_VERB = re.compile(r"\b(?:is|are|equals|be)\s+")
_CLAUSE = re.compile(r"\b(?:since|because|as|where|which|while|if|although|but|for)\b",
                     re.IGNORECASE)
OPENER = re.compile(r"[\s,]*(?:(?:so|thus|therefore|hence|then|right|and|that|means|in|total|"
                     r"all|overall|altogether|finally)[\s,.]*)*", re.IGNORECASE)
_THERE = re.compile(r"\bthere\s+(?:are|is|were|was|will\s+be)\s+(?:(?:exactly|only|indeed|just|"
                    r"a\s+total\s+of|in\s+total|then)\s+)*", re.IGNORECASE)


def value_of(ans: str) -> str:
    """The value an unmarked final statement gives: the right side of ``f(1000)=1016``,
    ``a+b=12``, ``x(x+2)+(x+2) = (x+1)(x+2)`` (what the sentence says the quantity IS). Kept
    whole: a name and its value (``x = 5``, ``y = 2x + 3``: the comparator reads those), an
    equation ``= 0`` in two or more variables (a line, a plane), anything with a relation, a
    list or a matrix in it (``-\\frac{a}{6} = 1 and a = -6``, ``a \\equiv 1``). Marked
    answers (a box, a heading, a "final answer" statement) are never cut: what a response
    marks as its answer is compared as written. An answer too long to check is left as it is
    (the verifier calls it ``too_large``)."""
    if "=" not in ans or len(ans) > MAX_ANSWER or _RELATION.search(ans):
        return ans
    inner = re.fullmatch(r"\s*(\$\$?|\\\[|\\\()(.*?)(\$\$?|\\\]|\\\))\s*\.?\s*", ans, re.DOTALL)
    if inner:
        ans = inner.group(2)
    depth, cuts = 0, []
    for i, ch in enumerate(ans):
        depth += ch in "({["
        depth -= ch in ")}]"
        if ch == "=" and depth == 0:
            cuts.append(i)
    if not cuts or _NAME.fullmatch(ans[:cuts[0]]):
        return ans
    rhs = ans[cuts[-1] + 1:].strip().rstrip(".").strip()
    names = set(re.findall(r"(?<![\\A-Za-z])[A-Za-z](?![A-Za-z])", ans[:cuts[0]]))
    if rhs == "0" and len(names) >= 2:  # "x-2y+z-1=0": the equation of a plane is the answer
        return ans
    if len(cuts) == 1 and _names_a_value(ans[:cuts[0]], rhs):
        return ans  # "x^2+y^2 = 13": the comparison takes 13 for a value, all for an equation
    return rhs or ans


def _names_a_value(left: str, right: str) -> bool:
    """:func:`structure.named_quantity` on the cleaned sides."""
    try:
        return named_quantity(squeeze(clean(left)), squeeze(clean(right)))
    except TooLarge:
        return False


def counted(sentence: list) -> str | None:
    """``So there are 28 ways to choose 2 cooks from 8 people``, ``there are $40$ integers
    $x$ that satisfy ...``: the count the sentence states, not its last number."""
    for k, x in enumerate(sentence):
        if isinstance(x, Span):
            return None  # "The probability is $\\frac{5}{36}$, since there are 36 outcomes"
        for m in _THERE.finditer(x):
            if not OPENER.fullmatch(x[:m.start()]):
                return None
            rest = x[m.end():]
            if re.match(r"\d+\s+[A-Za-z]+\s+(?:and|or)\s+\d", rest):  # "3 red and 4 blue"
                return None
            if not rest.strip() and k + 1 < len(sentence) and isinstance(sentence[k + 1], Span):
                inner = sentence[k + 1].inner.strip()
                if is_number(inner):
                    return inner
            num = re.match(r"(\d{1,3}(?:,\d{3})+|\d+)\s+[A-Za-z]", rest)
            if num:
                return num.group(1)
    return None


_SUBJECT = re.compile(r"(\d{1,3}(?:,\d{3})+|\d+)\s+[A-Za-z]+(?:\s+[A-Za-z]+)?\s+(?:are|is|were|was|"
                      r"will\s+be|would\s+be)\b")


def subject_count(sentence: list, span_answer: str | None) -> str | None:
    """``Therefore, 20 workers are needed to produce \\(\\frac{720}{K}\\) widgets``: the count
    the sentence opens with, when the math after it is an expression in unknowns (what the
    counted things do), not a value."""
    head = sentence[0] if sentence and isinstance(sentence[0], str) else ""
    m = _SUBJECT.search(head)
    if not m or not OPENER.fullmatch(head[:m.start()]) or not span_answer:
        return None
    try:
        return m.group(1) if unknowns(squeeze(clean(span_answer))) else None
    except TooLarge:
        return None


def after_spans(sentence: list) -> list:
    """The prose after the sentence's last math span: ``the remainder when $9^{1995}$ is
    divided by 7 is 1`` gives ``is divided by 7 is 1`` (what the sentence says the span IS)."""
    k = max((i for i, x in enumerate(sentence) if isinstance(x, Span)), default=-1)
    rest = sentence[k + 1:]
    if k >= 0 and _CLAUSE.search(" ".join(rest)):  # "$\\frac{5}{36}$, since there are 36 ..."
        return []
    return rest


def no_span_statement(sentence: list) -> str | None:
    """``Therefore, the midpoint is (-1,6)``: the whole expression after the sentence's last
    ``is``/``=``, when it ends the sentence (at most two words, a unit, after it)."""
    text = " ".join(x for x in sentence if isinstance(x, str))
    last = None
    for last in ticks(_IS.finditer(text)):
        pass
    if last is None:
        return None
    tries = [last]
    if last.group(0)[0] == "=":  # "the circle is x^2 + y^2 = 13": the equation, if it is whole
        verb = None
        for verb in ticks(_VERB.finditer(text, 0, last.start())):
            pass
        tries = [verb, last] if verb else tries
    for m in tries:
        expr = _statement_after(text[m.end():])
        if expr is not None and (m is last or ("=" in expr and "*" not in expr)):
            return expr  # (a "*" may be markdown: "is *n* = **5**" is 5, read from the "=")
    return None


def _statement_after(rest: str) -> str | None:
    """The whole expression *rest* starts with, when at most two words (a unit) follow it."""
    expr = lead_expression(rest)
    if expr is None:
        return None
    tail = rest[rest.find(expr) + len(expr):]
    if tail[:1] not in ("", " ", ".", ",", "!", "*", "\n"):  # "1,000.99m²": not a whole expression
        return None
    tail = tail.strip(" .,!*")
    return expr if len(tail.split()) <= 2 and not PHRASE.search(tail) else None
