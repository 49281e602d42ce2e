"""The common LaTeX shapes read straight to the sympy expression latex2sympy2 builds for them.

latex2sympy2_extended parses with an ANTLR grammar whose Python runtime builds its prediction
tables lazily: in a fresh worker the first parses of each kind of expression take 2-300 ms
(the CLI over 2,044 long-reasoning responses spent 5 of its 7 CPU seconds there). :func:`read`
is a recursive-descent reader of a subset of that grammar that builds, node for node, the
expression latex2sympy2's converter builds (``evaluate=False`` where it uses it, its flattening
of sums and products, its Rational for integer quotients, its mixed numbers ``2\\frac12``, its
symbol names ``P_0``, ``x_{12}``, ``rho_0``), so a verdict never depends on which of the two
read a value. Anything outside the subset, or anywhere the grammar is ambiguous, is None and
goes to latex2sympy2 as before. Checked by ``tests/verifiers/math/test_math_latex_reader.py`` and
``bench/latex_reader.py``: ``srepr`` equal to latex2sympy2's on every value read, over the
answers of public corpora.

Read (a squeezed leaf): integers and decimals; letters except ``d`` before a letter (a
differential there), ``e`` (Euler's ``exp``, as ``e`` or ``e^{..}``), ``E`` (e-notation); Greek
letters but ``\\gamma``; ``\\pi``; a letter's subscript (a digit, a letter or braced digits and
letters) and superscript; ``+ - * / \\cdot \\times \\div ^``; products by juxtaposition;
``\\frac``, ``\\dfrac``, ``\\tfrac``; ``\\sqrt{..}`` and ``\\sqrt[..]{..}``; ``( )``, ``[ ]``
and ``{ }`` inside a value; ``\\sin`` ... ``\\tanh``, ``\\ln``, ``\\log``, ``\\log_b``,
``\\exp`` with a parenthesised argument, or a single number or letter ended by a sign or the
end, and a power on a function. Not read: a letter or Greek letter before ``(``, ``[`` or
``{`` (a function applied, in that grammar), a whole value in brackets (a tuple or set
there), relations, commas, ``\\pm``, ``!``, ``%``, ``\\infty``, ``\\left``, any other command.
"""

from __future__ import annotations

import re

import sympy

_TOKEN = re.compile(r"[0-9]*\.[0-9]+|[0-9]+|\\[a-zA-Z]+|[a-zA-Z]|\S")
_GREEK = frozenset(
    ["alpha", "beta", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta",
     "iota", "kappa", "lambda", "mu", "nu", "xi", "rho", "sigma", "tau", "upsilon", "phi",
     "varphi", "chi", "psi", "omega", "Delta", "Theta", "Lambda", "Xi", "Sigma", "Phi", "Psi",
     "Omega", "pi"])
_TRIG = frozenset(["sin", "cos", "tan", "csc", "sec", "cot"])
_HYPER = frozenset(["sinh", "cosh", "tanh"])
_ARC = frozenset(["arcsin", "arccos", "arctan"])
_FUNCS = _TRIG | _HYPER | _ARC | {"ln", "log", "exp"}
_COMMANDS = frozenset({"\\" + c for c in _GREEK | _FUNCS} | {
    "\\frac", "\\dfrac", "\\tfrac", "\\sqrt", "\\cdot", "\\times", "\\div"})
# tokens of that grammar that start with one of ours and are longer (its lexer takes the
# longest): a command run starting with one is not split here
_LONGER = ("\\arcsinh", "\\arccosh", "\\arctanh", "\\exponentialE")
# tokens of that grammar's lexer made of plain letters (an operator name, ``\\operatorname``'s
# words, a matrix environment's name): a text with one inside is not read here
_WORDS = re.compile("|".join(sorted([
    "SVD", "arccosh", "arcosh", "arcsinh", "arctanh", "array", "arsinh", "artanh", "bmatrix",
    "ceil", "cols", "diag", "eig", "eye", "floor", "gcd", "hstack", "lcm", "matrix", "norm",
    "nullspace", "ones", "orth", "pmatrix", "rank", "rows", "rref", "svd", "tr", "vmatrix",
    "vstack", "zeros"], key=len, reverse=True)))
_MUL, _DIV = ("*", "\\cdot", "\\times"), ("/", "\\div")
_ENDS_ARG = (None, "+", "-", ")", "]", "}")
MAX_TOKENS = 400


class _No(Exception):
    """Outside the subset: latex2sympy2 reads it."""


def _tokens(s: str) -> list[str] | None:
    if _WORDS.search(s) or not s.isascii() or "^T" in s or "^{T}" in s:  # ^T: a transpose
        return None
    out: list[str] = []
    for tok in _TOKEN.findall(s):
        if tok.startswith("\\") and len(tok) > 1 and tok not in _COMMANDS:
            if tok.startswith(_LONGER):
                return None
            cut = next((k for k in range(len(tok) - 1, 1, -1) if tok[:k] in _COMMANDS), 0)
            if not cut:
                return None
            out.append(tok[:cut])
            out.extend(tok[cut:])  # \lambdakT: \lambda k T, as that grammar's lexer reads it
        else:
            out.append(tok)
    return out


def _flat(cls, lh, rh):
    """latex2sympy2's add_flat / mul_flat: one level of the same operation flattened."""
    args = [*(lh.args if isinstance(lh, cls) else (lh,)), *(rh.args if isinstance(rh, cls) else (rh,))]
    return cls(*args, evaluate=False)


def _negate(v):
    return -v if v.func.is_Number else _flat(sympy.Mul, sympy.Integer(-1), v)


def _is_number(tok: str) -> bool:
    return tok[0].isdigit() or tok[0] == "." and len(tok) > 1


def _is_int(v) -> bool:
    return isinstance(v, sympy.Integer)


class _Reader:
    def __init__(self, toks: list[str]) -> None:
        self.t, self.i = toks, 0

    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.t[j] if j < len(self.t) else None

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise _No
        self.i += 1
        return tok

    def expr(self):
        node = self.mp()
        while self.peek() in ("+", "-"):
            op = self.take()
            rh = self.mp()
            node = _flat(sympy.Add, node, rh if op == "+" else _negate(rh))
        return node

    def mp(self):
        node = self.unary()
        while self.peek() in _MUL or self.peek() in _DIV:
            op = self.take()
            rh = self.unary()
            if op in _MUL:
                node = _flat(sympy.Mul, node, rh)
            elif _is_int(node) and _is_int(rh):
                node = sympy.Rational(node, rh)
            else:
                node = sympy.Mul(node, sympy.Pow(rh, -1, evaluate=False), evaluate=False)
        return node

    def unary(self):
        if self.peek() in ("+", "-"):
            sign = self.take()
            v = self.unary()
            return v if sign == "+" else _negate(v)
        items = [self.postfix()]
        while self._starts_atom(self.peek()):
            items.append(self.postfix())
        node = items[-1]
        for res in reversed(items[:-1]):  # convert_postfix_list: right to left
            if _is_int(res) and isinstance(node, sympy.Rational) and node.p > 0 and node.q > 0:
                node = sympy.Rational(res * node.q + (-node.p if res < 0 else node.p), node.q)
            else:
                node = _flat(sympy.Mul, res, node)
        return node

    def _starts_atom(self, tok: str | None) -> bool:
        if tok is None:
            return False
        return _is_number(tok) or tok in ("(", "[", "{") or (
            tok.isascii() and tok.isalpha()) or tok in _COMMANDS and tok not in _MUL + _DIV

    def postfix(self):
        node = self.comp()
        if self.peek() == "^":
            self.take()
            node = sympy.Pow(node, self.script(), evaluate=False)
            if self.peek() in ("^", "_"):
                raise _No
        return node

    def script(self):
        """What follows ``^``: a braced expression or one atom (a whole number token)."""
        if self.peek() == "{":
            return self.braced()
        tok = self.peek()
        if tok is not None and _is_number(tok):
            return self.number()
        if tok is not None and tok.isalpha() and tok not in ("d", "e", "E", "I", "T"):
            self.take()
            return self.symbol(tok)
        raise _No

    def braced(self):
        self.take("{")
        node = self.expr()
        self.take("}")
        return node

    def number(self):
        text = self.take()
        if self.peek() in ("_", "%") or self.peek() == "E":
            raise _No
        if text.isdigit():
            text = text.lstrip("0") or "0"
        return sympy.Number(text)

    def comp(self):
        tok = self.peek()
        if tok is None:
            raise _No
        if tok in ("(", "[", "{"):
            self.take()
            node = self.expr()
            self.take({"(": ")", "[": "]", "{": "}"}[tok])
            return node
        if _is_number(tok):
            return self.number()
        if tok in ("\\frac", "\\dfrac", "\\tfrac"):
            self.take()
            top, bot = self.braced(), self.braced()
            if _is_int(top) and _is_int(bot):
                return sympy.Rational(top, bot)
            return sympy.Mul(top, sympy.Pow(bot, -1, evaluate=False), evaluate=False)
        if tok == "\\sqrt":
            self.take()
            root = None
            if self.peek() == "[":
                self.take()
                root = self.expr()
                self.take("]")
            base = self.braced()
            return sympy.Pow(base, sympy.S.Half if root is None else 1 / root, evaluate=False)
        if tok[1:] in _FUNCS:
            return self.function()
        if tok == "e":
            self.take()
            if self.peek() != "^":
                return sympy.exp(1)
            self.take()
            return sympy.exp(self.script())
        return self.letter()

    def letter(self):
        tok = self.take()
        greek = tok[1:] in _GREEK
        if not (greek or (tok.isascii() and tok.isalpha() and len(tok) == 1)):
            raise _No
        nxt = self.peek()
        if tok == "E" or tok == "d" and nxt is not None and (nxt[0].isalpha() or nxt[0] == "\\"):
            raise _No  # e-notation; a differential (d followed by a letter is one token there)
        if tok == "I":
            if self.peek() in ("^", "_", "(", "[", "{"):
                raise _No  # I^2 is I there (the power dropped); I(0) a function
            return sympy.I
        name = tok
        if self.peek() == "_":
            self.take()
            name += self.subscript()
        j = self.i
        if self.peek() == "^":  # x^2(y): the bracket after the power
            j = self._group_end(j + 1) if self.peek(1) == "{" else j + 2
        if j < len(self.t) and (self.t[j] == "{" or self.t[j] in ("(", "[") and self._one_atom(j)):
            raise _No  # f(x), f_1(2), x^2(y): a function applied in that grammar
        return self.symbol(name)  # k(4k^2+1), x[y+1]: a product there too

    def _group_end(self, j: int) -> int:
        """The index after the bracket group opening at *j* (or the end)."""
        depth = 0
        while j < len(self.t):
            depth += 1 if self.t[j] in ("(", "[", "{") else -1 if self.t[j] in (")", "]", "}") else 0
            j += 1
            if depth == 0:
                break
        return j

    def _one_atom(self, j: int) -> bool:
        """Could the bracket group at *j* hold one atom of that grammar (a number, a letter with
        its scripts; a comma list)? A letter before it is then a function applied there (its
        ``func_common_args``), else a product: ``f(x)`` is f applied, ``k(4k^2+1)`` k times a
        sum. Two tokens or fewer, a comma, or a script after the first token: maybe one."""
        inside = self.t[j + 1:self._group_end(j) - 1]
        return len(inside) <= 2 or "," in inside or inside[1] in ("_", "^")

    def subscript(self) -> str:
        """The subscript's text as that converter names it: ``_0``, ``_{12}``."""
        tok = self.take()
        if tok == "{":
            parts = []
            while self.peek() != "}":
                part = self.take()
                if not (part.isascii() and part.isalnum()) or part in ("d", "e", "E"):
                    raise _No
                parts.append(part)
            self.take("}")
            text = "".join(parts)
        elif tok.isascii() and (tok.isdigit() or tok.isalpha()) and tok not in ("d", "e", "E"):
            text = tok
        else:
            raise _No
        if not text:
            raise _No
        return "_" + text if len(text) == 1 else "_{" + text + "}"

    @staticmethod
    def symbol(name: str):
        """latex2sympy2's symbols.get_symbol for these names (Greek ones are their own names)."""
        name = name.lstrip("\\")
        return sympy.pi if name == "pi" else sympy.Symbol(name)

    def function(self):
        name = self.take()[1:]
        base = power = None
        if name == "log" and self.peek() == "_":
            self.take()
            base = self.braced() if self.peek() == "{" else self.number()
        if self.peek() == "^":
            self.take()
            power = self.script()
        if self.peek() == "(":
            self.take()
            arg = self.expr()
            self.take(")")
            if self._starts_atom(self.peek()):
                raise _No  # \sin(x)y: which grouping that grammar takes is not certain
        elif self.peek() is not None and (_is_number(self.peek()) or (
                len(self.peek()) == 1 and self.peek().isalpha() and self.peek() not in "deEI")):
            arg = self.number() if _is_number(self.peek()) else self.symbol(self.take())
            if self.peek() not in _ENDS_ARG:
                raise _No  # \ln 2x, \sin x/2: how far an argument reaches is the grammar's
        else:
            raise _No
        if name in ("ln", "log"):
            expr = sympy.log(arg, base if base is not None else sympy.E if name == "ln" else 10,
                             evaluate=False)
        elif name == "exp":
            expr = sympy.exp(arg, evaluate=False)
        else:
            if name in _ARC:
                name = "a" + name[3:]
            elif power == -1:
                name, power = "a" + name, None
            expr = getattr(sympy, name)(arg, evaluate=False)
        return sympy.Pow(expr, power, evaluate=False) if power else expr


def read(text: str):
    """latex2sympy2's expression for *text*, or None when it is outside the subset."""
    toks = _tokens(text)
    if not toks or len(toks) > MAX_TOKENS or toks[0] == "{" and _wrapped(toks):
        return None
    r = _Reader(toks)
    try:
        node = r.expr()
    except (_No, RecursionError):
        return None
    except Exception:  # noqa: BLE001  (anything sympy raises building it: latex2sympy2 decides)
        return None
    return node if r.i == len(toks) else None


def _wrapped(toks: list[str]) -> bool:
    """The whole value in one brace pair (a set in that grammar; in ( ) or [ ] a tuple of
    one, which is its element)."""
    depth = 0
    for k, tok in enumerate(toks):
        depth += 1 if tok in ("(", "[", "{") else -1 if tok in (")", "]", "}") else 0
        if depth == 0:
            return k == len(toks) - 1
    return False
