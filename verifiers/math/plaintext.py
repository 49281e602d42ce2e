"""Plain-text and SymPy-syntax math rewritten into the LaTeX the rest of the verifier reads.

Models often answer in the notation of a calculator or of Python/SymPy: ``-1 + exp(16)``,
``pi/2``, ``sqrt(2)/2``, ``x**2``, ``2^(1/3)``, ``14.0 + -1.0i``, ``(3+4j)``, ``oo``.
:func:`to_latex` rewrites those spellings, by string rules only (no ``eval``, no sympy; every
rule is a linear scan, and the answer is already bounded by ``normalize.MAX_ANSWER``):

- ``**`` -> ``^``; ``^(..)`` -> ``^{..}`` (the exponent is the whole parenthesised group);
- ``sqrt(..)``, ``\\sqrt(..)`` and ``sqrt3`` -> ``\\sqrt{..}``; ``exp(..)`` -> ``e^{..}``;
  ``abs(..)`` -> ``|..|``; ``log(..)`` -> ``\\ln(..)`` (SymPy's and Python's ``log`` is
  natural; LaTeX ``\\log`` is read as base 10); ``ln``, ``sin``, ``cos``, ``tan``, ``cot``,
  ``sec``, ``csc``, ``asin``... -> the LaTeX command. Only a name not preceded by a backslash
  or a letter, and directly followed by ``(``;
- the words ``pi`` -> ``\\pi``, ``oo`` / ``inf`` / ``infinity`` -> ``\\infty``;
- the imaginary unit: ``j`` after a digit (Python's ``3+4j``) and SymPy's ``I``, but only in
  an answer made of nothing but numbers, operators, brackets, ``sqrt``, ``pi``, ``exp`` and
  that unit, the unit next to an operator or a digit (``2*I``, ``14 - I``, ``pi*I``,
  ``14 - 1j``): elsewhere ``I`` and ``j`` may be names (an integral, an index), and ``II`` is
  a roman numeral.

``*`` is left as it is (both readers downstream take it as a product); ``e`` and ``i`` are
already Euler's number and the imaginary unit everywhere in the verifier.
NOT covered: Python's ``math.``/``np.`` prefixes, ``E`` for Euler's number, ``Rational(1,
2)``-style constructors, ``log(x, 2)``, words (``two thirds``), ``x in S`` for ``x \\in S``.
"""

from __future__ import annotations

import re

_FUNCS = {"sqrt": None, "exp": None, "abs": None, "log": r"\ln", "ln": r"\ln"}
_FUNCS.update({f: "\\" + f for f in ("sin", "cos", "tan", "cot", "sec", "csc", "arcsin",
                                     "arccos", "arctan", "sinh", "cosh", "tanh")})
_FUNCS.update({"asin": r"\arcsin", "acos": r"\arccos", "atan": r"\arctan"})
_CALL = re.compile(r"(?<![\\a-zA-Z])(" + "|".join(sorted(_FUNCS, key=len, reverse=True))
                   + r")\s*\(")
_POW_GROUP = re.compile(r"\^\s*\(")
_PI = re.compile(r"(?<![\\a-zA-Z])pi(?![a-zA-Z])")
_INF = re.compile(r"(?<![\\a-zA-Z])(?:oo|inf|infinity|Infinity)(?![a-zA-Z])")
_PY_COMPLEX = re.compile(r"^[\s\d.+\-*/()]*\dj[\s\d.+\-*/()j]*$")
_SYMPY_I = re.compile(r"^(?:[\s\d.+\-*/()^I]|sqrt|pi|exp)*$")
_SYMPY_I_USE = re.compile(r"[\d*+\-]\s*I(?!I)|(?<!I)I\s*[*+\-]")
_BSQRT = re.compile(r"\\sqrt\s*\(")
_SQRT_DIGITS = re.compile(r"(?<![\\a-zA-Z])sqrt\s*(\d+)")
_HINT = re.compile(r"\*\*|\^\s*\(|[a-z]\s*\(|pi|oo|inf|\dj|I|sqrt")


def to_latex(s: str) -> str:
    """Rewrite plain-text/SymPy spellings in *s* (module docstring); LaTeX passes unchanged."""
    if not _HINT.search(s):
        return s
    if _PY_COMPLEX.match(s):
        s = re.sub(r"(?<=\d)j", "i", s)
    elif _SYMPY_I.match(s) and _SYMPY_I_USE.search(s) and "II" not in s:  # II: a numeral
        s = s.replace("I", "i")
    s = s.replace("**", "^")
    s = _rewrite_groups(s, _POW_GROUP, lambda name, inner: "^{" + inner + "}")
    s = _rewrite_groups(s, _CALL, _call)
    s = _rewrite_groups(s, _BSQRT, lambda name, inner: r"\sqrt{" + inner + "}")
    s = _SQRT_DIGITS.sub(r"\\sqrt{\1}", s)
    s = _PI.sub(r"\\pi ", s)
    return _INF.sub(r"\\infty ", s)


def _call(name: str, inner: str) -> str:
    if name == "sqrt":
        return r"\sqrt{" + inner + "}"
    if name == "exp":
        return "e^{" + inner + "}"
    if name == "abs":
        return "|" + inner + "|"
    fn = _FUNCS[name]
    assert fn is not None  # the names mapped to None are the three above
    return fn + "(" + inner + ")"


def _rewrite_groups(s: str, pat: re.Pattern, rewrite) -> str:
    """Replace each ``name(..)`` that *pat* finds (up to its open bracket) by
    ``rewrite(name, inside)``, inner groups first; an unclosed bracket stops the rewriting."""
    for _ in range(len(s)):
        found = None
        for m in pat.finditer(s):
            found = m  # the last one: it has no unrewritten call inside it
        if found is None:
            return s
        close = _closing(s, found.end())
        if close < 0:
            return s
        name = found.group(1) if found.groups() else ""
        s = s[:found.start()] + rewrite(name, s[found.end():close]) + s[close + 1:]
    return s


def _closing(s: str, i: int) -> int:
    """Index of the ``)`` closing the bracket opened just before *i*, or -1."""
    depth = 1
    for j in range(i, len(s)):
        if s[j] == "(":
            depth += 1
        elif s[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    return -1
