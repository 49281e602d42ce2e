"""Two single values shown unequal in floating point, in the calling process, without sympy.

A pair the fast path cannot decide goes to a sympy worker, which decides most of them by
evaluating both sides at fixed points (``symbolic._identity``): unequal at a point where
they differ. :func:`differ` runs that check here first, on a small reader of its own, and
says True only where sympy's would say "unequal" too: both sides read, no decimal literal
(sympy's rounding rules for decimals are not repeated here), and at some point both values
finite, real, and apart by far more than the rounding of the largest value met on the way
(a cancellation such as ``(x+10^{15})-10^{15}`` never passes for a difference). Anything
else is None, and the pair goes to sympy as before: this only keeps worker trips out, it
never says "equal".

Read here (a squeezed leaf after :func:`normalize.clean`): integers; one-letter symbols with
a subscript, Greek letters; ``\\pi``, ``e``, ``i``; ``+ - * / \\cdot \\times \\div ^``;
products by juxtaposition (``2x``, ``xy``, ``(a+1)(b)``); ``\\frac``, ``\\sqrt``,
``\\sqrt[n]``; parentheses and braces; ``\\sin`` ... ``\\arctan``, ``\\sinh`` ...,
``\\ln``, ``\\exp`` with a parenthesised or braced argument, and ``\\sin^2(x)``. Not read
(None): decimals, ``\\log`` (its base), a letter before ``(`` (a function?), primes, dots,
``|..|``, ``!``, derivatives, sums, integrals, any other command.
"""

from __future__ import annotations

import cmath
import math
import re

_TOKEN = re.compile(r"[0-9]+|\\[a-zA-Z]+|[a-zA-Z]|\*\*|\S")
_GREEK = frozenset(
    ["alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi", "rho", "sigma", "tau", "upsilon", "phi", "varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Sigma", "Phi", "Psi", "Omega"])
_FUNCS = {"\\sin": cmath.sin, "\\cos": cmath.cos, "\\tan": cmath.tan,
          "\\cot": lambda z: 1 / cmath.tan(z), "\\sec": lambda z: 1 / cmath.cos(z),
          "\\csc": lambda z: 1 / cmath.sin(z), "\\arcsin": cmath.asin, "\\arccos": cmath.acos,
          "\\arctan": cmath.atan, "\\sinh": cmath.sinh, "\\cosh": cmath.cosh,
          "\\tanh": cmath.tanh, "\\ln": cmath.log, "\\exp": cmath.exp}
# the points of symbolic._POINTS, the symbols sorted by name and shifted as it shifts them
POINTS = (0.5772156649015329, 1.3247179572447460, -0.7071067811865475, 2.2360679774997897,
          -1.6180339887498949, 0.3183098861837907, -2.6457513110645906)
MAX_TOKENS = 400


class _No(Exception):
    """Not read here: sympy decides."""


class _Reader:
    """Recursive descent over the tokens to a tree of tuples: ("num", v), ("sym", name),
    ("neg", a), ("+"|"*"|"/"|"^", a, b), ("fn", f, a), ("root", n, a)."""

    def __init__(self, toks: list[str]) -> None:
        self.t, self.i, self.syms = toks, 0, set()

    def peek(self) -> str | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise _No
        self.i += 1
        return tok

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
        if tok.isascii() and tok.isdigit():
            return ("num", complex(int(tok)))
        if tok == "\\pi":
            return ("num", complex(math.pi))
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
                return ("num", cmath.e if tok == "e" else 1j)
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
    if "." in s or "%" in s or len(s) > MAX_TOKENS * 4:
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
    return node, r.syms


def _eval(node, env: dict, scale: list):
    kind = node[0]
    if kind == "num":
        v = node[1]
    elif kind == "sym":
        v = env[node[1]]
    elif kind == "neg":
        v = -_eval(node[1], env, scale)
    elif kind == "fn":
        v = _FUNCS[node[1]](_eval(node[2], env, scale))
    elif kind == "root":
        base = _eval(node[2], env, scale)
        n = 2 if node[1] is None else _eval(node[1], env, scale)
        v = base ** (1 / n)
    else:
        a, b = _eval(node[1], env, scale), _eval(node[2], env, scale)
        v = a + b if kind == "+" else a * b if kind == "*" else a / b if kind == "/" else a ** b
    if not (math.isfinite(v.real) and math.isfinite(v.imag)):
        raise OverflowError
    scale[0] = max(scale[0], abs(v))
    return v


def differ(gold: str, pred: str) -> bool | None:
    """True when the two squeezed single values are unequal at one of sympy's points (module
    docstring), else None (not shown here)."""
    a, b = _read(gold), _read(pred)
    if a is None or b is None:
        return None
    syms = sorted(a[1] | b[1])
    for k in range(len(POINTS)):
        env = {s: complex(POINTS[(k + 2 * j) % len(POINTS)]) for j, s in enumerate(syms)}
        scale = [1.0]
        try:
            va, vb = _eval(a[0], env, scale), _eval(b[0], env, scale)
        except (ZeroDivisionError, OverflowError, ValueError):
            continue
        tol = 1e-9 * scale[0]
        if abs(va.imag) > tol or abs(vb.imag) > tol:
            continue  # a point where a side is not real: sympy skips or decides otherwise
        if abs(va.real - vb.real) > max(tol, 1e-6 * max(abs(va.real), abs(vb.real))):
            return True
    return None
