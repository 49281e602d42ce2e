"""String-level normalisation of math answers, and exact parsing of plain numbers.

Pure Python (``re`` and ``fractions``): no sympy, so everything here runs in the calling process
and is bounded by the input size limits below (all regexes are linear; no nested quantifiers).

What :func:`clean` removes or rewrites: math delimiters (``$``, ``\\(``, ``\\[``), ``\\left`` /
``\\right`` and size commands, ``\\dfrac``/``\\tfrac``, ``\\frac12``-style shorthand, ``\\sqrt2``,
spacing commands, ``^\\circ`` and ``\\degree``, ``\\$``, trailing units written as
``\\text{..}``/``\\mathrm{..}``/``\\mbox{..}``, a trailing unit word after a plain number
(``18 dollars``), trailing full stops, and a whole-answer thousands separator (``1,000``,
``1{,}000``). ``\\%`` becomes ``%`` (see :class:`Num` for the percent policy). Plain-text and
SymPy spellings (``sqrt(2)/2``, ``x**2``, ``exp(16)``, ``pi``) become LaTeX first (see
:mod:`plaintext`); a whole answer ``4 4/9`` is the mixed number 40/9 (a proper fraction after
an integer and one space; ``2 3`` stays two numbers).

What it does NOT do: unit conversion, spelling out numbers ("five"), or any algebra.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from dapo_bench.verifiers.math.plaintext import to_latex

MAX_ANSWER = 4000  # characters of one extracted answer (or gold) beyond which we say too_large
MAX_DEPTH = 48  # brace/bracket nesting beyond which we say too_large
MAX_EXP = 400  # |exponent| accepted by the plain-number parser (10^400 is cheap for Fraction)


class TooLarge(ValueError):
    """The answer is too long or too deeply nested to check within bounds."""


_UNICODE = {
    "\u2212": "-", "\u2013": "-", "\u00d7": r"\times ", "\u22c5": r"\cdot ", "\u00b7": r"\cdot ",
    "\u00b0": "", "\u03c0": r"\pi ", "\u221e": r"\infty ", "\u221a": r"\sqrt", "\u2264": r"\le ",
    "\u2265": r"\ge ", "\u2260": r"\ne ", "\u00a0": " ", "\u2009": " ", "\u202f": " ",
    "\u00bd": r"\frac{1}{2}", "\u00b2": "^2", "\u00b3": "^3",
    "\u222a": r"\cup ", "\u2208": r"\in ", "\u00f7": r"\div ", "\u00b1": r"\pm ",
    "\u2213": r"\mp ",
}
_UNICODE_RE = re.compile("|".join(map(re.escape, _UNICODE)))

_SUBS: list[tuple[re.Pattern, str]] = [
    (re.compile(r"\\(?:left|right|bigl|bigr|Bigl|Bigr|biggl|biggr|big|Big|bigg|Bigg)(?![a-zA-Z])"
                r"\s*\.?"), ""),
    (re.compile(r"\\[dtc]frac(?![a-zA-Z])"), r"\\frac"),
    # digit-group separators: 1,\!000  12{,}345  14 {, }916  1\,000  (before spacing goes)
    (re.compile(r"(?<=\d),\s*\\!\s*(?=\d)|(?<=\d)\s*\{\s*,\s*\}\s*(?=\d)"), ","),
    (re.compile(r"(?<=\d)\\[,;:! ]\s*(?=\d{3}(?!\d))"), " "),
    (re.compile(r"(?<!\\)((?:\\\\)*)\\!"), r"\1"),
    (re.compile(r"\\q?quad(?=[a-zA-Z])"), " "),  # "\quadx_2": a missing space
    (re.compile(r"\\(?:displaystyle|textstyle|limits|nolimits|mathpunct)(?![a-zA-Z])"), ""),
    (re.compile(r"(?<!\\)((?:\\\\)*)\\(?:[,;:! ]|quad(?![a-zA-Z])|qquad(?![a-zA-Z]))"),
     r"\1 "),  # a spacing command, not the second half of a row break "\\ "
    (re.compile(r"~"), " "),
    (re.compile(r"\{,\}"), ","),
    (re.compile(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ(?![a-zA-Z])|\\circ(?![a-zA-Z])"
                r"|\\degree(?![a-zA-Z])"), ""),
    (re.compile(r"\\\$"), ""),
    (re.compile(r"\\%"), "%"),
    (re.compile(r"\\(?:le|leqslant|leqq)(?![a-zA-Z])|<=|=<"), r"\\leq "),
    (re.compile(r"\\(?:ge|geqslant|geqq)(?![a-zA-Z])|>="), r"\\geq "),
    (re.compile(r"\\neq(?![a-zA-Z])|!="), r"\\ne "),
    (re.compile(r"(?<![\w)}])\+\s*(?=\\infty)"), ""),
    (re.compile(r"\\lt(?![a-zA-Z])"), "<"),
    (re.compile(r"\\gt(?![a-zA-Z])"), ">"),
    # \frac12 -> \frac{1}{2}; \frac1{2} and \frac{1}2 likewise (one-token arguments).
    (re.compile(r"\\frac\s*([0-9a-zA-Z])\s*([0-9a-zA-Z])"), r"\\frac{\1}{\2}"),
    (re.compile(r"\\frac\s*([0-9a-zA-Z])\s*\{"), r"\\frac{\1}{"),
    (re.compile(r"\\frac\s*\{([^{}]*)\}\s*([0-9a-zA-Z])"), r"\\frac{\1}{\2}"),
    (re.compile(r"\\sqrt\s*([0-9a-zA-Z])"), r"\\sqrt{\1}"),
]
_DELIMS = re.compile(r"\$|\\\(|\\\)|\\\[|\\\]")
# a family of solutions' parameter, stated after it: ", k \in \mathbb{Z}", "\text{ for } k \in
# \mathbb{Z}", "\text{ for any integer } k", "\text{ where } k \text{ is an integer}"
_TEXT = r"\\(?:text|textrm|mbox|mathrm)\s*\{"
_INTEGERS = re.compile(
    r"(?:\s|,|;|\\q?quad\b)*\(?\s*(?:" + _TEXT + r"\s*,?\s*(?:for|where)\s*(?:all|any|some|every)?\s*\}"
    r"\s*)?[a-zA-Z]\s*\\in\s*\\(?:mathbb|Bbb)\s*\{?\s*[ZN]\s*\}?\s*\)?\s*$"
    r"|(?:\s|,|;)*" + _TEXT + r"\s*,?\s*(?:for|where)\s+(?:all|any|some|every)?\s*(?:integers?|"
    r"whole\s+numbers?)\s*\}\s*[a-zA-Z]\s*$"
    r"|(?:\s|,|;)*" + _TEXT + r"\s*,?\s*(?:for|where)\s*\}\s*[a-zA-Z]\s*" + _TEXT
    + r"\s*(?:is|are)\s+(?:an?\s+)?(?:integers?|any\s+integer)\s*\.?\s*\}\s*$")
_STRAY_BACKSLASH = re.compile(r"(?<!\\)\\(?=\d)")  # "\15" for "\$15": no command starts so
_TEXT_CMD = r"\\(?:text|textrm|textnormal|textbf|textit|mathrm|mbox|mathbf|mathit|rm|operatorname)"
_TRAILING_UNIT = re.compile(
    _TEXT_CMD + r"\s*\{\s*[a-zA-Z][a-zA-Z .\-/]*\}\s*(?:\^\s*\{?-?\d\}?)?\s*$")
_TEXT_UNWRAP = re.compile(_TEXT_CMD + r"\s*\{([^{}]*)\}")
_PLAIN_NUMBER_UNIT = re.compile(
    r"^(-?[\d.,/]+%?)\s+(?:[a-zA-Z]{2,}\.?)(?:\s*(?:/|per)?\s*[a-zA-Z]{1,}\.?)?(?:\^\{?\d\}?)?$")
_MATH_WORDS = frozenset({"pi", "sqrt", "frac", "infty", "and", "or", "cdot", "times", "i"})
_THOUSANDS = re.compile(r"^-?[1-9]\d{0,2}(?:(?:,\d{3})+|(?: \d{3})+)(?:\.\d+)?%?$")
_WS_RUN = re.compile(r"\s+")
_MIXED_TEXT = re.compile(r"^([+-]?\d+) (\d+)/(\d+)$")
_DIGIT_SPACE = re.compile(r"(?<=\d) (?=\d)")  # "2 3" is two numbers, never 23


def check_size(s: str) -> None:
    """Raise :class:`TooLarge` when *s* is longer than MAX_ANSWER or nests deeper than MAX_DEPTH."""
    if len(s) > MAX_ANSWER:
        raise TooLarge(f"answer of {len(s)} characters (limit {MAX_ANSWER})")
    depth = 0
    for ch in s:
        if ch in "{([":
            depth += 1
            if depth > MAX_DEPTH:
                raise TooLarge(f"nesting deeper than {MAX_DEPTH}")
        elif ch in "})]":
            depth -= 1


def clean(s: str) -> str:
    """Rewrite a LaTeX answer into the canonical spelling the rest of the verifier expects.

    Keeps spaces (the structure parser splits on words such as ``and``); see
    :func:`squeeze` for the final, space-free form of a single value.
    """
    check_size(s)
    s = to_latex(_UNICODE_RE.sub(lambda m: _UNICODE[m.group(0)], s))
    s = _WS_RUN.sub(" ", _DELIMS.sub(" ", s))  # single spaces keep the regexes below linear
    m = _INTEGERS.search(s, max(0, len(s) - 160))  # (the tail only: linear on any answer)
    s = _STRAY_BACKSLASH.sub("", s[:m.start()] if m else s)
    s = _first_of_equivalents(s)
    for pat, rep in _SUBS:
        s = pat.sub(rep, s)
    s = s.strip()
    for _ in range(3):  # "5 \text{m}/\text{s}" style units, peeled from the end
        m = _TRAILING_UNIT.search(s)
        if not m or m.start() == 0:
            break
        s = s[: m.start()].rstrip().rstrip("/").rstrip()
    s = _TEXT_UNWRAP.sub(lambda m: m.group(1), s)
    s = strip_unit(_strip_punct(s))
    m = _MIXED_TEXT.match(s)
    if m and int(m.group(2)) < int(m.group(3)):  # "4 4/9" is 40/9: neither 4 nor a list
        s = rf"{m.group(1)}\frac{{{m.group(2)}}}{{{m.group(3)}}}"
    if _THOUSANDS.match(s):
        s = s.replace(",", "").replace(" ", "")
    return _DIGIT_SPACE.sub(", ", s)


_EQUIVALENTLY = re.compile(r"(?:,|;|\(|\\text\{|\\quad|\s)*(?:\bor\s+)?\bequivalently\b", re.IGNORECASE)


def _first_of_equivalents(s: str) -> str:
    """``\\frac12, or equivalently 0.5``: one answer written two ways is its first way (never
    the list of both)."""
    k = s.lower().find("equivalently")
    if k < 0:
        return s
    m = _EQUIVALENTLY.search(s, max(0, k - 40))
    return s[:m.start()].rstrip() if m and m.start() > 0 else s


def strip_unit(s: str) -> str:
    """``18 dollars`` -> ``18``: a plain number followed by unit words (not math words)."""
    m = _PLAIN_NUMBER_UNIT.match(s)
    if m and not (set(re.findall(r"[a-zA-Z]+", s[m.end(1):])) & _MATH_WORDS):
        return m.group(1)
    return s


def _strip_punct(s: str) -> str:
    """Drop leading colons and trailing full stops, commas, colons, semicolons and ``\\\\``."""
    s = s.lstrip(" :")
    while True:
        t = s.rstrip(" .,;:")
        t = t.removesuffix("\\\\")
        if t == s:
            return t
        s = t


_CMD_SPACE = re.compile(r"(\\[a-zA-Z]+)\s+(?=[a-zA-Z0-9])")
_WS = re.compile(r"\s+")


_SCRIPT = re.compile(r"(?<!\\)([_^])([0-9a-zA-Z])(?![0-9a-zA-Z])")


def squeeze(s: str) -> str:
    """Drop spaces that carry no meaning (keeps one after a command: ``\\pi r`` stays), and
    brace a script of one character alone (``4210_5`` is ``4210_{5}``, ``x^2`` is ``x^{2}``; never
    ``2^10``, which plain text means as 1024: one
    spelling, decided as the same form without sympy)."""
    s = _CMD_SPACE.sub(lambda m: m.group(1) + "\x00", s.strip())
    return _SCRIPT.sub(r"\1{\2}", _WS.sub("", s).replace("\x00", " "))


@dataclass(frozen=True)
class Num:
    """A plain number read exactly: its value, and how it was written.

    ``decimal`` marks a number written with a decimal point or in scientific notation;
    ``places`` is its count of digits after the point (scaled by the exponent) and ``sig`` its
    significant digits. ``percent`` marks a trailing ``%`` (``value`` excludes it).
    """

    value: Fraction
    decimal: bool = False
    places: int = 0
    sig: int = 0
    percent: bool = False


_INT = re.compile(r"^([+-]?)(\d+)$")
_DEC = re.compile(r"^([+-]?)(\d*)\.(\d+)$")
_SCI = re.compile(r"^([+-]?)(\d+)(?:\.(\d+))?(?:[eE]|(?:\\times ?|\\cdot ?|\*|x)10\^)\{?([+-]?\d{1,3})\}?$")
_POW10 = re.compile(r"^([+-]?)10\^\{?([+-]?\d{1,3})\}?$")
_FRAC = re.compile(r"^([+-]?)\\frac\{([+-]?\d+)\}\{([+-]?\d+)\}$")
_SLASH = re.compile(r"^([+-]?)(\d+)/(\d+)$")
_MIXED = re.compile(r"^([+-]?)(\d+)\\frac\{(\d+)\}\{(\d+)\}$")


_UNIT = (r"(?:[kMGmμunpc]?(?:m|s|g|K|J|N|W|V|Pa|Hz|L|mol|eV|cal|Å|Ω|F|T|A|C)|min|hr?s?|yrs?"
         r"|atm|bar|lbs?|ft|in|mi|mph|rpm)(?:\^\{?-?\d\}?)?")
_NUMBER_UNIT = re.compile(rf"^(-?[\d.,]+(?:\\times ?10\^\{{?-?\d+\}}?|e-?\d+)?){_UNIT}(?:/{_UNIT})*$")


def number_with_unit(s: str) -> Num | None:
    """A squeezed ``2.78m``, ``9.8m/s^2``, ``700C`` (from ``700°C``), ``5Å``: the number before
    an SI or common unit symbol, or None. Only ever read against a gold that is a plain number
    (:func:`check.fast_leaf_eq`): alone, ``5m`` may be the product ``5m``."""
    m = _NUMBER_UNIT.match(s)
    return parse_number(m.group(1).replace(",", "")) if m else None


def parse_number(s: str) -> Num | None:
    """Read *s* (a squeezed answer) as an exact number, or return None.

    Accepts integers (leading zeros allowed: AIME's ``023``), decimals, scientific notation
    (``1.5e-3``, ``1.5\\times10^{-3}``, ``10^{-5}``), ``\\frac{a}{b}``, ``a/b``, mixed numbers
    (``3\\frac{1}{2}`` = 7/2), an optional sign and a trailing ``%``.
    """
    if len(s) > 200:
        return None
    pct = s.endswith("%")
    if pct:
        s = s[:-1]
    if m := _INT.match(s):
        return Num(_signed(m.group(1), Fraction(int(m.group(2)))), percent=pct)
    if m := _DEC.match(s):
        ip, fp = m.group(2), m.group(3)
        return Num(_signed(m.group(1), Fraction(int(ip or "0") * 10 ** len(fp) + int(fp),
                                               10 ** len(fp))),
                   True, len(fp), _sig(ip + fp), pct)
    if m := _SCI.match(s):
        ip, fp, e = m.group(2), m.group(3) or "", int(m.group(4))
        if abs(e) > MAX_EXP:
            return None
        mant = Fraction(int(ip + fp), 10 ** len(fp))
        return Num(_signed(m.group(1), mant * Fraction(10) ** e), True, len(fp) - e,
                   _sig(ip + fp), pct)
    if m := _POW10.match(s):
        e = int(m.group(2))
        return None if abs(e) > MAX_EXP else Num(_signed(m.group(1), Fraction(10) ** e),
                                                 percent=pct)
    if m := _FRAC.match(s) or _SLASH.match(s):
        den = int(m.group(3))
        return None if den == 0 else Num(_signed(m.group(1), Fraction(int(m.group(2)), den)),
                                         percent=pct)
    if m := _MIXED.match(s):
        den = int(m.group(4))
        if den == 0:
            return None
        return Num(_signed(m.group(1), int(m.group(2)) + Fraction(int(m.group(3)), den)),
                   percent=pct)
    return None


def _signed(sign: str, v: Fraction) -> Fraction:
    return -v if sign == "-" else v


def _sig(digits: str) -> int:
    return len(digits.lstrip("0")) or 1


def terminates(v: Fraction) -> bool:
    """True when *v* has a finite decimal expansion (denominator of only 2s and 5s)."""
    d = v.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1


def decimal_matches(dec: Num, exact: Fraction, exact_terminates: bool) -> bool:
    """The rounding rule for a decimal GOLD against an exact prediction.

    Equal values are equal. Otherwise the gold decimal stands for the exact value only when
    that value does not terminate (1/3, sqrt 2, pi), the decimal has at least 3 significant
    digits, and it is the exact value rounded to the decimal's own places: gold ``0.333`` is
    1/3 and gold ``3.14`` is pi, but gold ``0.33`` is not 1/3 and gold ``0.13`` is not 1/8.
    """
    if exact == dec.value:
        return True
    if exact_terminates or dec.sig < 3:
        return False
    return abs(exact - dec.value) <= Fraction(10) ** (-dec.places) / 2


def numbers_equal(g: Num, p: Num) -> bool:
    """Gold *g* against prediction *p*. Exact numbers compare exactly; two decimals compare by
    value (``0.50`` = ``0.5``). **Rounded values**: a decimal prediction equals an exact gold
    only when the values are equal (``0.5`` = 1/2, but ``0.333`` != 1/3 and ``3.14159`` !=
    pi: the exact answer was asked for), or when it has FULL_PRECISION (10) or more
    significant digits and is the exact value rounded (a float printed in full:
    ``0.0833333333333333`` = 1/12); a decimal gold may stand for an exact prediction by
    :func:`decimal_matches` (the gold's author rounded).

    Percent policy: when exactly one side carries ``%``, that side may be read as ``p`` or as
    ``p/100`` (``50%`` = ``50`` = ``0.5``); when both carry it, the numbers compare as written.
    Without any ``%``, ``50`` != ``0.5``.
    """
    if g.percent == p.percent:
        return _num_eq(g, p)
    return any(_num_eq(a, b) for a in _percent_forms(g) for b in _percent_forms(p))


def _percent_forms(n: Num) -> list[Num]:
    if not n.percent:
        return [n]
    return [n, Num(n.value / 100, n.decimal, n.places + 2, n.sig)]


FULL_PRECISION = 10  # significant digits from which a decimal prediction is a float's full value


def _num_eq(g: Num, p: Num) -> bool:
    if g.value == p.value:
        return True
    if g.decimal == p.decimal or (p.decimal and p.sig < FULL_PRECISION):
        return False
    dec, ex = (g, p) if g.decimal else (p, g)
    return decimal_matches(dec, ex.value, terminates(ex.value))
