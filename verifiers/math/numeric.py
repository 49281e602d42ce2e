"""Two single values compared at sympy's points in floating point, in the calling process.

A pair the fast path cannot decide goes to a sympy worker, which decides most of them by
evaluating both sides at fixed points (``symbolic._identity``: unequal at a point where they
differ with one side real, equal at three where they agree). :func:`compare` runs that check
here first, on a small reader of its own, and decides only where sympy's check would decide
the same way by a wide margin: both sides read; **unequal** at a point where both values are
finite, real
and apart by far more than the rounding of the largest value met on the way (a cancellation
such as ``(x+10^{15})-10^{15}`` never passes for a difference), and, with a decimal literal
on either side, by 1% or more (sympy's rounding rules for decimals, ``3.14`` = ``\\pi``, are
not repeated here); **equal** only for functions without decimals
of symbols (constants are sympy's, at 50 digits) that agree to 20 digits at three points or
more and differ at none, the rounding allowing 20 digits. The arithmetic is mpmath's (sympy's
own, imported without sympy) at 40 digits. Anything else is None, and the pair goes to sympy
as before.

Read here (a squeezed leaf after :func:`normalize.clean`): integers and decimals; one-letter symbols with
a subscript, Greek letters; ``\\pi``, ``e``, ``i``; ``+ - * / \\cdot \\times \\div ^``;
products by juxtaposition (``2x``, ``xy``, ``(a+1)(b)``); ``\\frac``, ``\\sqrt``,
``\\sqrt[n]``; parentheses and braces; ``\\sin`` ... ``\\arctan``, ``\\sinh`` ...,
``\\ln``, ``\\exp`` with a parenthesised or braced argument, and ``\\sin^2(x)``. Not read
(None): ``\\log`` (its base), a letter before ``(`` (a function?), primes, dots,
``|..|``, ``!``, derivatives, sums, integrals, any other command.
"""

from __future__ import annotations

import re
from functools import cache

from dapo_bench.verifiers.math.exact import Tokens

_TOKEN = re.compile(r"[0-9]+(?:\.[0-9]+)?|\\[a-zA-Z]+|[a-zA-Z]|\*\*|\S")
_GREEK = frozenset(
    ["alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi", "rho", "sigma", "tau", "upsilon", "phi", "varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Sigma", "Phi", "Psi", "Omega"])
_FUNCS = ("\\sin", "\\cos", "\\tan", "\\cot", "\\sec", "\\csc", "\\arcsin", "\\arccos",
          "\\arctan", "\\sinh", "\\cosh", "\\tanh", "\\ln", "\\exp")
DIGITS = 40  # mpmath's working precision: sympy evaluates at 30 digits


@cache
def _mp():
    """mpmath (sympy's own arithmetic; imported on first use, without sympy) at DIGITS, and
    the functions by command."""
    import mpmath

    ctx = mpmath.mp.clone()
    ctx.dps = DIGITS
    fns = {"\\sin": ctx.sin, "\\cos": ctx.cos, "\\tan": ctx.tan, "\\cot": ctx.cot,
           "\\sec": ctx.sec, "\\csc": ctx.csc, "\\arcsin": ctx.asin, "\\arccos": ctx.acos,
           "\\arctan": ctx.atan, "\\sinh": ctx.sinh, "\\cosh": ctx.cosh, "\\tanh": ctx.tanh,
           "\\ln": ctx.log, "\\exp": ctx.exp}
    return ctx, fns
# the points of symbolic._POINTS, the symbols sorted by name and shifted as it shifts them
POINTS = ("0.5772156649015329", "1.3247179572447460", "-0.7071067811865475",
          "2.2360679774997897", "-1.6180339887498949", "0.3183098861837907", "-2.6457513110645906")
MAX_TOKENS = 400


class _No(Exception):
    """Not read here: sympy decides."""


class _Reader(Tokens):
    """Recursive descent over the tokens to a tree of tuples: ("num", v), ("sym", name),
    ("neg", a), ("+"|"*"|"/"|"^", a, b), ("fn", f, a), ("root", n, a)."""

    error = _No

    def __init__(self, toks: list[str]) -> None:
        super().__init__(toks)
        self.syms: set[str] = set()
        self.decimal = False

    def expr(self):
        node = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            rhs = self.term()
            node = ("+", node, ("neg", rhs) if op == "-" else rhs)
        return node

    def term(self):
        node = self.unary()
        while True:
            tok = self.peek()
            if tok in ("*", "\\cdot", "\\times"):
                self.take()
                node = ("*", node, self.unary())
            elif tok in ("/", "\\div"):
                self.take()
                node = ("/", node, self.power())
                if self._starts_atom(self.peek()):
                    raise _No  # "1/2x": 1/(2x) or x/2? as sympy reads it is not sure
            elif self._starts_atom(tok):
                node = ("*", node, self.power())
            else:
                return node

    def unary(self):
        if self.peek() in ("-", "+"):
            sign = self.take()
            node = self.unary()
            return ("neg", node) if sign == "-" else node
        return self.power()

    def power(self):
        node = self.atom()
        if self.peek() == "^":
            self.take()
            node = ("^", node, self.script())
            if self.peek() == "^":
                raise _No
        return node

    def script(self):
        tok = self.peek()
        if tok == "{":
            return self.group()
        if tok is not None and tok.isascii() and (tok.isdigit() and len(tok) == 1
                                                  or tok.isalpha() or tok == "\\pi"):
            return self.atom()
        raise _No

    def group(self):
        opener = self.take()
        closer = {"{": "}", "(": ")"}.get(opener)
        if closer is None:
            raise _No
        node = self.expr()
        self.take(closer)
        return node

    def _starts_atom(self, tok: str | None) -> bool:
        return tok is not None and tok.isascii() and (tok[0].isalnum() or tok in ("(", "{", "\\pi", "\\frac", "\\sqrt")
                                    or tok in _FUNCS or tok[1:] in _GREEK)

    def atom(self):
        tok = self.peek()
        if tok is None:
            raise _No
        if tok in ("(", "{"):
            return self.group()
        self.take()
        if tok.isascii() and tok.replace(".", "", 1).isdigit():
            if "." in tok:
                self.decimal = True
            return ("num", tok)
        if tok == "\\pi":
            return ("num", "pi")
        if tok == "\\frac":
            return ("/", self.group_braced(), self.group_braced())
        if tok == "\\sqrt":
            index = None
            if self.peek() == "[":
                self.take()
                index = self.expr()
                self.take("]")
            return ("root", index, self.group_braced())
        if tok in _FUNCS:
            power = None
            if self.peek() == "^":
                self.take()
                power = self.script()
                if power == ("neg", ("num", 1)):
                    raise _No  # \sin^{-1}: arcsin or 1/sin
            if self.peek() not in ("(", "{"):
                raise _No  # "\sin x": how far its argument reaches is sympy's to say
            node = ("fn", tok, self.group())
            return ("^", node, power) if power is not None else node
        if tok.isascii() and tok.isalpha() and len(tok) == 1 or tok[1:] in _GREEK:
            if tok == "e" or (tok == "i" and self.peek() != "_"):
                return ("num", tok)
            name = tok
            if self.peek() == "_":
                self.take()
                sub = self.peek()
                if sub == "{":
                    start = self.i
                    self.group()
                    name += "_{" + "".join(self.t[start + 1:self.i - 1]) + "}"
                elif sub is not None and sub.isalnum() and len(sub) == 1:
                    name += "_{" + self.take() + "}"
                else:
                    raise _No
            if self.peek() in ("(", "'"):
                raise _No  # f(x): a function applied, or a product; f': a derivative
            self.syms.add(name)
            return ("sym", name)
        raise _No

    def group_braced(self):
        if self.peek() != "{":
            raise _No
        return self.group()


def _read(s: str):
    if "%" in s or len(s) > MAX_TOKENS * 4:
        return None
    toks = _TOKEN.findall(s)
    if len(toks) > MAX_TOKENS or "".join(toks) != s.replace(" ", ""):
        return None
    r = _Reader(toks)
    try:
        node = r.expr()
        if r.i != len(toks):
            return None
    except (_No, RecursionError):
        return None
    return node, r.syms, r.decimal


def _eval(node, env: dict, scale: list, ctx, fns):
    kind = node[0]
    if kind == "num":
        c = node[1]
        v = ctx.mpc(ctx.pi if c == "pi" else ctx.e if c == "e" else ctx.j if c == "i" else
                    ctx.mpf(c))
    elif kind == "sym":
        v = env[node[1]]
    elif kind == "neg":
        v = -_eval(node[1], env, scale, ctx, fns)
    elif kind == "fn":
        v = fns[node[1]](_eval(node[2], env, scale, ctx, fns))
    elif kind == "root":
        base = _eval(node[2], env, scale, ctx, fns)
        n = 2 if node[1] is None else _eval(node[1], env, scale, ctx, fns)
        v = ctx.power(base, 1 / ctx.mpc(n))
    else:
        a, b = _eval(node[1], env, scale, ctx, fns), _eval(node[2], env, scale, ctx, fns)
        if kind == "/" and b == 0:
            raise ZeroDivisionError
        v = a + b if kind == "+" else a * b if kind == "*" else a / b if kind == "/" \
            else ctx.power(a, b)
    size = abs(v)
    if not ctx.isfinite(size) or size > 10**300:
        raise OverflowError
    scale[0] = max(scale[0], size)
    return ctx.mpc(v)


def _points(a, b):
    """(va, vb, scale) at each of sympy's points where both sides evaluate."""
    ctx, fns = _mp()
    syms = sorted(a[1] | b[1])
    for k in range(len(POINTS)):
        env = {s: ctx.mpc(POINTS[(k + 2 * j) % len(POINTS)]) for j, s in enumerate(syms)}
        scale = [ctx.mpf(1)]
        try:
            va, vb = _eval(a[0], env, scale, ctx, fns), _eval(b[0], env, scale, ctx, fns)
        except (ZeroDivisionError, OverflowError, ValueError):
            continue
        yield va, vb, scale[0]


def compare(gold: str, pred: str) -> bool | None:
    """False when the two squeezed single values are unequal at one of sympy's points; True
    when they are functions of symbols equal at every point where either is real, to 20
    digits, three points at least; else None (module
    docstring). Constants are left to sympy's 50 digits (``e^{\\pi\\sqrt{163}}`` is within
    1e-29 of an integer)."""
    a, b = _read(gold), _read(pred)
    if a is None or b is None:
        return None
    decimal = a[2] or b[2]  # sympy's rules for decimals: only a gap of 1% or more is shown
    agreed, equal = 0, bool(a[1] | b[1]) and not decimal
    for va, vb, scale in _points(a, b):
        tol = scale * 10 ** (8 - DIGITS)  # rounding of the largest value met, with room
        real_a, real_b = abs(va.imag) <= tol, abs(vb.imag) <= tol
        if not (real_a and real_b):
            equal = equal and not (real_a or real_b)  # one side real, the other not
            continue  # (sympy skips a point where both are non-real)
        gap, size = abs(va.real - vb.real), max(abs(va.real), abs(vb.real))
        if gap > max(tol, size * (10 ** -2 if decimal else 10 ** -12)):
            return False
        if gap > max(tol, size * 10 ** -20) or tol > size * 10 ** -20:
            equal = False  # too close to call, or what rounding leaves is not 20 digits
        agreed += 1
    return True if equal and agreed >= 3 else None


def differ(gold: str, pred: str) -> bool | None:
    """True when :func:`compare` shows the two values unequal, else None."""
    return True if compare(gold, pred) is False else None
