"""Exact algebra without sympy: a canonical form for polynomials with radical coefficients.

:func:`canonical` reads one squeezed value (LaTeX or plain text after :func:`normalize.clean`)
into a canonical form, or returns None when the value is outside what is read here. Two
values with canonical forms are equal exactly when their forms are equal; that is what lets
the fast path of ``check.py`` decide radicals (``3\\sqrt{2}`` = ``\\sqrt{18}``) and
polynomials (``(x+2)(x+3)`` = ``x^2+5x+6``) in the calling process, both ways, without sympy.

What is read: integers (and decimals whose digits after the point are all zeros, ``14.0``),
``n!`` (n <= 5000), ``+ - * / \\cdot \\times \\div``, implicit products (``2x``,
``(x+1)(x-1)``, ``xy`` = x*y, as latex2sympy reads them), integer powers (``x^2``,
``x^{10}``, ``(x+1)**3``; constants also to negative powers), ``\\frac{..}{..}``,
``\\sqrt{..}`` of a rational constant, ``i`` (the imaginary unit), one-letter variables with
an optional subscript (``x_1``), Greek-letter variables, and ``\\pi`` *or* ``e`` (never both).
Division is only by a single nonzero term free of variables (``\\frac{x}{2\\sqrt3}``).

Why the form is canonical (so "not equal" is as sound as "equal"): a value is a polynomial
in its variables and in ``\\pi`` (or ``e``) whose coefficients are rational combinations of
``i^s \\sqrt{m}`` (``s`` 0 or 1, ``m`` squarefree). Square roots of distinct squarefree
integers (with ``\\sqrt{-1}``) are linearly independent over Q, ``\\pi`` and ``e`` are each
transcendental over the algebraic numbers, and polynomials in real variables agree
everywhere only when their coefficients do. ``\\pi`` and ``e`` together are refused: whether
they are algebraically independent is not known.

NOT read (None: the sympy path decides): decimals other than ``n.0``, ``\\sqrt`` of anything
but a rational constant, ``\\sqrt[n]{}``, fractional or symbolic exponents, division by a
sum or by a variable, functions (``\\sin``, ``\\log``, ``f(x)``: a letter before ``(`` may be
a function), ``\\infty``, relations, anything ambiguous (``x2``, ``1/2x``).
Bounded: at most MAX_TERMS terms, MAX_WORK term products in all, exponents up to MAX_EXP
(constants) / MAX_DEGREE (with variables), radicands up to 10^12, ``n!`` up to 5000!, a
coefficient of at most MAX_BITS bits and MAX_BIT_WORK bits made by all products.
"""

from __future__ import annotations

import re
import threading
from fractions import Fraction
from functools import lru_cache
from math import factorial, gcd, isqrt

MAX_TERMS = 400
MAX_DEGREE = 64
MAX_EXP = 1000
MAX_RADICAND = 10**12
MAX_FACTORIAL = 5000
MAX_WORK = 4000  # term products per value: bounds the time of one reading (tens of ms)
MAX_BITS = 1 << 17  # bits of one coefficient (numerator and denominator): 5000!^2 fits
MAX_BIT_WORK = 1 << 21  # bits of all the coefficients the products of one reading make
_WORK = threading.local()

# A term key: (monomial, s, m) for  monomial * i^s * sqrt(m); monomial is a sorted tuple of
# (name, power). A form is a dict key -> nonzero Fraction.
_ONE = ((), 0, 1)
_TOKEN = re.compile(r"\d+(?:\.\d+)?|\\[a-zA-Z]+|[a-zA-Z]|\*\*|[-+*/^(){}!_]")
_GREEK = frozenset({
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta",
    "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi", "rho", "sigma", "tau", "upsilon",
    "phi", "varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Sigma",
    "Phi", "Psi", "Omega"})
_MUL = frozenset({"*", "\\cdot", "\\times"})
_DIV = frozenset({"/", "\\div"})


def _sieve(n: int) -> list[int]:
    """The primes below n (a sieve: trial division here cost every CLI start 35 ms)."""
    flags = bytearray([1]) * n
    flags[:2] = b"\x00\x00"
    for p in range(2, isqrt(n - 1) + 1):
        if flags[p]:
            flags[p * p::p] = bytes(len(range(p * p, n, p)))
    return [p for p in range(n) if flags[p]]


_PRIMES = _sieve(10**4)


class _No(Exception):
    """Outside what this module reads (or beyond its bounds)."""


@lru_cache(maxsize=8192)
def canonical(s: str) -> tuple | None:
    """The canonical form of *s* as a hashable tuple, or None (module docstring)."""
    if len(s) > 400:
        return None
    toks = _TOKEN.findall(s)
    if "".join(toks) != s.replace(" ", ""):
        return None  # a character the tokenizer does not know
    _WORK.left, _WORK.bits = MAX_WORK, MAX_BIT_WORK
    try:
        p = _Parser(toks)
        form = p.expr()
        if p.i != len(toks):
            return None
    except (_No, ZeroDivisionError, RecursionError):
        return None
    names = {n for (mono, _, _) in form for n, _ in mono}
    if "\\pi" in names and "e" in names:
        return None
    return tuple(sorted(form.items()))


def _add(a: dict, b: dict, sign: int = 1) -> dict:
    out = dict(a)
    for k, v in b.items():
        w = out.get(k, 0) + sign * v
        if w:
            out[k] = w
        else:
            out.pop(k, None)
    return out


def _mono_mul(m1: tuple, m2: tuple) -> tuple:
    if not m1:
        return m2
    if not m2:
        return m1
    d = dict(m1)
    for n, e in m2:
        d[n] = d.get(n, 0) + e
    if sum(d.values()) > MAX_DEGREE:
        raise _No
    return tuple(sorted(d.items()))


def _charge(c: Fraction) -> Fraction:
    """Count a product's bits against the reading's budget: a big-number product costs time
    that grows with its size (``5000!*5000!*...`` took seconds before this bound)."""
    bits = c.numerator.bit_length() + c.denominator.bit_length()
    _WORK.bits -= bits
    if bits > MAX_BITS or _WORK.bits < 0:
        raise _No
    return c


def _mul(a: dict, b: dict) -> dict:
    _WORK.left -= len(a) * len(b)
    if _WORK.left < 0:
        raise _No
    out: dict = {}
    for (m1, s1, r1), c1 in a.items():
        for (m2, s2, r2), c2 in b.items():
            g = gcd(r1, r2)
            c = _charge(c1 * c2 * g * (-1 if s1 + s2 == 2 else 1))
            k = (_mono_mul(m1, m2), (s1 + s2) % 2, (r1 // g) * (r2 // g))
            w = out.get(k, 0) + c
            if w:
                out[k] = w
            else:
                out.pop(k, None)
    if len(out) > MAX_TERMS:
        raise _No
    return out


def _inverse(a: dict) -> dict:
    """1 / a for a single constant term c * i^s * sqrt(m)."""
    if len(a) != 1:
        raise _No
    ((mono, s, m), c), = a.items()
    if mono:
        raise _No
    # 1/(c i^s sqrt m) = sqrt(m) / (c m i^s), and 1/i = -i
    return {((), s, m): (-1 if s else 1) / (c * m)}


def _pow(a: dict, n: int) -> dict:
    const = all(not mono for mono, _, _ in a)
    if abs(n) > (MAX_EXP if const else MAX_DEGREE):
        raise _No
    if n < 0:
        a, n = _inverse(a), -n
    out, base = {_ONE: Fraction(1)}, a
    while n:
        if n & 1:
            out = _mul(out, base)
        n >>= 1
        if n:
            base = _mul(base, base)
    return out


def _sqrt(a: dict) -> dict:
    """sqrt of a rational constant: sqrt(p/q) = sqrt(p q) / q, squarefree part taken out."""
    if not a:
        return {}
    if set(a) != {_ONE}:
        raise _No  # sqrt of a variable, of pi, of a radical: the sympy path
    v = a[_ONE]
    n, q = abs(v.numerator) * v.denominator, v.denominator
    if n > MAX_RADICAND:
        raise _No
    out, rest = Fraction(1, q), 1
    for p in _PRIMES:
        if p * p * p > n:
            break
        while n % (p * p) == 0:
            n //= p * p
            out *= p
        if n % p == 0:
            n //= p
            rest *= p
    r = isqrt(n)  # what is left has at most two prime factors, both above 10^4
    if r * r == n:
        out *= r
    else:
        rest *= n
    return {((), 1 if v < 0 else 0, rest): out}


class Tokens:
    """A token list read from the front (``exact``'s and ``numeric``'s parsers); ``take``
    raises ``error`` at the end or on another token than *want*."""

    error: type[Exception] = ValueError

    def __init__(self, toks: list[str]) -> None:
        self.t, self.i = toks, 0

    def peek(self) -> str | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise self.error
        self.i += 1
        return tok


class _Parser(Tokens):
    error = _No

    def expr(self) -> dict:
        out = self.unary()
        while self.peek() in ("+", "-"):
            sign = 1 if self.take() == "+" else -1
            out = _add(out, self.unary(), sign)
        return out

    def unary(self) -> dict:
        if self.peek() in ("+", "-"):
            sign = self.take()
            v = self.unary()
            return v if sign == "+" else {k: -c for k, c in v.items()}
        return self.term()

    def term(self) -> dict:
        out, divided = self.power(), False
        while True:
            tok = self.peek()
            if tok in _MUL or tok in _DIV:
                self.take()
                rhs = self.power()
                out, divided = (_mul(out, _inverse(rhs)), True) if tok in _DIV else \
                    (_mul(out, rhs), False)
            elif tok is not None and self._starts_atom(tok):
                if divided:
                    raise _No  # 1/2x: (1/2)x or 1/(2x)?
                out = _mul(out, self.power())
            else:
                return out

    def _starts_atom(self, tok: str) -> bool:
        if tok[0].isdigit():
            prev = self.t[self.i - 1]
            if prev[0].isalpha() or prev in (")", "}", "!"):
                raise _No  # x2, (x)2: not a product anyone writes
            return True
        return tok[0].isalpha() or tok in ("(", "{") or tok.startswith("\\") and \
            tok not in _MUL and tok not in _DIV

    def power(self) -> dict:
        base = self.atom()
        if self.peek() in ("^", "**"):
            self.take()
            tok = self.peek()
            if tok in ("{", "("):
                e = self.group()
            elif tok is not None and tok.isdigit():
                e = {_ONE: Fraction(int(self.take()))}  # x^10 is x**10, as latex2sympy reads it
            else:
                raise _No  # x^-1, x^\pi, x^2.5
            if len(e) != 1 or _ONE not in e or e[_ONE].denominator != 1:
                raise _No  # only integer exponents
            base = _pow(base, int(e[_ONE]))
            if self.peek() in ("^", "**", "!"):
                raise _No
        return base

    def group(self) -> dict:
        close = ")" if self.take() == "(" else "}"
        v = self.expr()
        self.take(close)
        return v

    def atom(self) -> dict:
        tok = self.take()
        if tok in ("(", "{"):
            self.i -= 1
            return self.group()
        if tok[0].isdigit():
            whole, _, frac = tok.partition(".")
            if frac.strip("0"):
                raise _No  # a decimal: the sympy path has the rounding rules
            v = int(whole)
            if self.peek() == "\\frac":
                raise _No  # 4\frac{4}{9}: a mixed number or a product? (normalize reads it)
            if self.peek() == "!":
                self.take()
                if v > MAX_FACTORIAL:
                    raise _No
                v = factorial(v)
            return {_ONE: Fraction(v)} if v else {}
        if tok == "i":
            return {((), 1, 1): Fraction(1)}
        if tok.isalpha() or tok == "\\pi" or tok[1:] in _GREEK:
            name = tok
            if self.peek() == "_":
                self.take()
                sub = self.take()
                if sub == "{":
                    sub = self.take()
                    self.take("}")
                if not sub.isalnum():
                    raise _No
                name += "_" + sub
            if self.peek() == "(" and tok.isalpha():
                raise _No  # f(x): a function, or a product?
            return {(((name, 1),), 0, 1): Fraction(1)}
        if tok == "\\frac":
            num = self.brace()
            return _mul(num, _inverse(self.brace()))
        if tok == "\\sqrt":
            return _sqrt(self.brace())
        raise _No

    def brace(self) -> dict:
        if self.peek() != "{":
            raise _No
        return self.group()
