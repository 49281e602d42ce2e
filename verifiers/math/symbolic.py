"""Symbolic equivalence of two single values with sympy (runs inside the bounded worker).

LaTeX is parsed by ``latex2sympy2_extended`` (symbols keep their case; ``i`` is the imaginary
unit and ``e`` Euler's number), its common shapes by :mod:`latex` to the same expressions. Rules, after the fast path of ``check.py`` has had its say:

- numbers without symbols: equal when they agree to 1e-30 *relative* (50-digit evaluation),
  so ``2\\sqrt{2}`` = ``\\sqrt{8}``; no tolerance is ever absolute: ``\\frac{1}{2004!}`` !=
  ``\\frac{1}{2006!}``, ``e^{-100}`` != ``e^{-101}``. A value sympy cannot evaluate precisely
  (a cancelled zero such as ``\\sin^2 1+\\cos^2 1-1``) is settled by ``simplify``. A decimal
  prediction against an irrational gold is never
  equal (``1.41`` != ``\\sqrt2``), a decimal gold against an irrational prediction uses the
  rounding rule of :func:`normalize.decimal_matches` (gold ``1.41`` = ``\\sqrt2``, gold
  ``1.4`` != ``\\sqrt2``); an expression with decimal literals inside compares to 1e-12
  relative;
- expressions with symbols: symbols are real, with no other assumption. Two sides are equal
  when they agree (1e-20 relative) at 3 of several fixed generic points of both signs, and
  unequal at the first point where they differ while at least one side is real there. A
  point where both sides are non-real is outside the real domain of both and skipped:
  ``\\sqrt{1/n}`` = ``\\frac{1}{\\sqrt{n}}`` (equal for n > 0; for n < 0 neither is real).
  Too few agreeing points: unequal when a skipped point differed, else ``simplify``.
  Piecewise-constant functions (``\\lfloor``, ``\\lceil``, ``\\bmod``) take integer variables
  and must agree at every integer from -7 to 23 (``\\lfloor n/2 \\rfloor`` !=
  ``\\lfloor(2n-1)/5\\rfloor``, which agree at the generic points).
  Removable singularities are ignored (``\\frac{x^2-1}{x-1}`` = ``x+1``); no other domain
  reasoning: ``\\sqrt{x^2}`` != ``x`` and ``\\ln x`` != ``\\ln|x|`` (one side is real at
  negative points, and they differ there).
  Variable names matter (``2t+1`` != ``2x+1``);
- equations: ``l1=r1`` equals ``l2=r2`` when ``l1-r1`` is a nonzero constant multiple of
  ``l2-r2`` (``y=2x+1`` = ``2x+1-y=0``); an equation whose sides are identical (``0=0``,
  ``x-x=0``) equals nothing; inequalities: same strictness and a *positive* multiple
  (``-x>-1`` = ``x<1`` = ``2x<2``, ``x<1`` != ``x>1``);
- infinities compare exactly; other sympy objects (sets, matrices) by sympy equality;
- a value with an integer exponent beyond 10^4 in magnitude (``10^{10^{10}}``) is not
  compared at all: reason ``too_large``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import sympy
from dapo_bench.verifiers.math import latex
from dapo_bench.verifiers.math.check import Undecided, fast_leaf_eq, prepare
from dapo_bench.verifiers.math.match import Trace, compare
from dapo_bench.verifiers.math.normalize import (
    FULL_PRECISION,
    TooLarge,
    decimal_matches,
    parse_number,
    terminates,
)

_POINTS = ("0.5772156649015329", "1.3247179572447460", "-0.7071067811865475",
           "2.2360679774997897", "-1.6180339887498949", "0.3183098861837907", "-2.6457513110645906")
_EXACT_TOL = sympy.Float("1e-30", 50)
_FLOAT_TOL = sympy.Float("1e-12", 50)
_POINT_TOL = sympy.Float("1e-20", 50)  # relative, at 30-digit points
_SPECIAL = (sympy.oo, -sympy.oo, sympy.zoo, sympy.nan)


MAX_POWER = 10**4  # |integer exponent| beyond which a value is too large to handle exactly


@dataclass
class State:
    parse_failed: bool = False
    too_large: bool = False


@lru_cache(maxsize=4096)
def to_sympy(text: str):
    """Parse one squeezed LaTeX value; None when latex2sympy cannot read it. The common shapes
    are read by :mod:`latex` (the same expression, without the ANTLR parser's start-up)."""
    expr = latex.read(text)
    if expr is None:
        try:
            expr = antlr_parser()(text)
        except Exception:  # noqa: BLE001  (the parser raises many kinds: all mean 'unreadable')
            return None
    if not isinstance(expr, (sympy.Basic, sympy.MatrixBase)):
        return None
    for pw in expr.atoms(sympy.Pow):
        exp = pw.exp
        if exp.is_number and not exp.is_Integer and exp.has(sympy.Pow):
            exp = exp.evalf(5)  # 10^{10^{10}} arrives with its exponent unevaluated
        if exp.is_number and exp.is_real and abs(exp) > MAX_POWER:
            raise TooLarge(f"exponent {exp} in {text[:40]!r}")
    i, e = sympy.Symbol("i"), sympy.Symbol("e")
    if expr.has(i) or expr.has(e):
        expr = expr.xreplace({i: sympy.I, e: sympy.E})
    return expr


@lru_cache(maxsize=1)
def antlr_parser():
    """latex2sympy2 (imported on first need: a worker whose values :mod:`latex` reads never
    loads the ANTLR runtime), with symbols keeping their case and no normalisation."""
    from latex2sympy2_extended import latex2sympy
    from latex2sympy2_extended.latex2sympy2 import ConversionConfig

    config = ConversionConfig(lowercase_symbols=False)
    return lambda text: latex2sympy(text, normalization_config=None, conversion_config=config)


def leaf_eq(g: str, p: str, state: State, trace: Trace | None = None) -> bool:
    """Gold leaf *g* against predicted leaf *p* (fast path first, then sympy)."""
    try:
        return fast_leaf_eq(g, p, trace)
    except Undecided:
        pass
    note = trace.note if trace else (lambda rule: True)
    if g.endswith("%") != p.endswith("%"):  # percent policy: see normalize.numbers_equal
        pc, other = (g, p) if g.endswith("%") else (p, g)
        base = pc[:-1]
        forms = [(base, other), (rf"\frac{{{base}}}{{100}}", other)]
        if pc is p:
            forms = [(b, a) for a, b in forms]
        return any(leaf_eq(a, b, state, trace) for a, b in forms)
    if g.endswith("%") and p.endswith("%"):
        g, p = g[:-1], p[:-1]
    try:
        a, b = to_sympy(g), to_sympy(p)
    except TooLarge:
        state.too_large = True
        return not note("too large")
    if a is None or b is None:
        state.parse_failed = True
        return not note("unreadable")
    dec = parse_number(g)
    if dec is not None and dec.decimal and _is_constant(b):
        note("sympy: decimal gold vs exact")
        return _decimal_vs_exact(dec, b, rounded=True)
    dec = parse_number(p)
    if dec is not None and dec.decimal and _is_constant(a):
        note("sympy: decimal vs exact gold")
        return _decimal_vs_exact(dec, a, rounded=dec.sig >= FULL_PRECISION)
    return equal(a, b, note)


def _is_constant(x) -> bool:
    return isinstance(x, sympy.Expr) and not x.free_symbols and not x.has(*_SPECIAL)


def _decimal_vs_exact(dec, exact, rounded: bool) -> bool:
    """A decimal against an exact constant: equal values always; a rounded value only for a
    decimal gold (*rounded*), see :func:`normalize.numbers_equal`."""
    if exact.has(sympy.Float):
        return _numbers_close(sympy.Rational(dec.value.numerator, dec.value.denominator),
                              exact, _FLOAT_TOL)
    if exact.is_Rational:
        v = Fraction(int(exact.p), int(exact.q))
        return v == dec.value or (rounded and decimal_matches(dec, v, terminates(v)))
    val = exact.evalf(60)
    if not _reliable(val):  # an exact form of zero (\\sin^2 1+\\cos^2 1-1)
        return dec.value == 0 and sympy.simplify(exact) == 0
    if not val.is_real:
        return False
    v = Fraction(str(val))
    if abs(v - dec.value) <= Fraction(1, 10**40) * abs(v):  # relative: tiny values differ
        return True  # an exact form of the same terminating value (\sin\frac{\pi}{6} = 0.5)
    return rounded and decimal_matches(dec, v, False)


def equal(a, b, note=lambda rule: True) -> bool:
    """Sympy-level equality of two parsed values (see the module docstring)."""
    if a == b:
        return note("sympy: same expression")
    rel = sympy.core.relational.Relational
    if isinstance(a, sympy.Equality) and isinstance(b, sympy.Equality):
        note("sympy: equations")
        return _proportional(a.lhs - a.rhs, b.lhs - b.rhs, positive=False)
    if isinstance(a, rel) or isinstance(b, rel):
        note("sympy: relations")
        return _relations_equal(a, b)
    mat = (sympy.MatrixBase, sympy.MatrixExpr)
    if isinstance(a, mat) or isinstance(b, mat):
        note("sympy: matrices")
        a, b = a.doit() if isinstance(a, mat) else a, b.doit() if isinstance(b, mat) else b
        if not (isinstance(a, sympy.MatrixBase) and isinstance(b, sympy.MatrixBase)) \
                or a.shape != b.shape:
            return False
        return all(equal(x, y) for x, y in zip(a, b))
    if not (isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr)):
        note("sympy: objects")
        return bool(a == b)
    if a.has(*_SPECIAL) or b.has(*_SPECIAL):
        return not note("sympy: infinities differ")
    tol = _FLOAT_TOL if (a.has(sympy.Float) or b.has(sympy.Float)) else _EXACT_TOL
    syms = sorted(a.free_symbols | b.free_symbols, key=lambda s: s.name)
    if not syms:
        note("sympy: numeric")
        return _numbers_close(a, b, tol)
    if a.has(*_UNEVALUATED) or b.has(*_UNEVALUATED):
        note("sympy: expanded difference")  # sums with symbolic bounds: points do not help
        return bool(sympy.expand(a - b) == 0)
    if a.has(*_STEPS) or b.has(*_STEPS):
        note("sympy: steps at every point")  # floor(n/2) and floor((2n-1)/5) agree at 3 points
        return _steps_identity(a, b, syms, tol)
    note("sympy: identity at points")
    return _identity(a, b, syms, tol)


_STEPS = (sympy.floor, sympy.ceiling, sympy.frac, sympy.Mod, sympy.sign, sympy.Piecewise)
_STEP_POINTS = [sympy.Integer(k) for k in range(-7, 24)]


def _steps_identity(a, b, syms, tol) -> bool:
    """Piecewise-constant functions (floor, ceiling, Mod...) agree at a few generic points
    without being equal. Their variables are integers in the answers that use them (a
    competition's ``n``), so they are equal when they agree at every integer from -7 to 23
    (each further symbol shifted by its index: ``\\lceil n/2 \\rceil`` =
    ``\\lfloor (n+1)/2 \\rfloor``); a point where either side is not a real number is skipped,
    and three must remain."""
    pts = [{s: v + j for j, s in enumerate(syms)} for v in _STEP_POINTS]
    valid = 0
    for subs in pts:
        va, vb = a.evalf(30, subs=subs), b.evalf(30, subs=subs)
        if not (va.is_number and vb.is_number) or va.has(*_SPECIAL) or vb.has(*_SPECIAL) \
                or not (va.is_real and vb.is_real):
            continue
        if not _close(va, vb, max(tol, _POINT_TOL)):
            return False
        valid += 1
    return valid >= 3


_UNEVALUATED = (sympy.Sum, sympy.Product, sympy.Integral, sympy.Derivative, sympy.Limit)


_GT = (sympy.StrictGreaterThan, sympy.GreaterThan)


def _relations_equal(a, b) -> bool:
    """``l1 op r1`` = ``l2 op r2``: same strictness, and the sides' differences (oriented
    ``big - small``) a positive constant multiple of each other (any nonzero multiple for
    ``\ne``)."""
    kinds = {sympy.StrictLessThan: "<", sympy.StrictGreaterThan: "<", sympy.LessThan: "<=",
             sympy.GreaterThan: "<=", sympy.Unequality: "!="}
    ka, kb = kinds.get(type(a)), kinds.get(type(b))
    if ka is None or ka != kb:
        return False

    def diff(r):
        return r.lhs - r.rhs if isinstance(r, _GT) else r.rhs - r.lhs

    return _proportional(diff(a), diff(b), positive=ka != "!=")


def _reliable(v) -> bool:
    """False for an evaluation sympy could not pin down (a cancelled zero prints ``0.e-160``
    with no precision): such a value decides nothing by itself."""
    return all(f._prec >= 100 for f in v.atoms(sympy.Float))


def _close(va, vb, tol) -> bool | None:
    """Two evaluated numbers: True (equal to *tol* relative), False (different), None (not
    decidable from these values: one of them is an imprecise zero). Never an absolute
    tolerance: ``\\frac{1}{2004!}`` and ``\\frac{1}{2006!}`` are tiny and different."""
    d = abs(va - vb)
    if d <= tol * max(abs(va), abs(vb)):
        return True
    if not (_reliable(va) and _reliable(vb)):
        return None
    return False


MAX_SUM_TERMS = 10_000  # a finite sum of numbers up to this many terms is added up term by term


def _finite_sums(e):
    """*e* with each sum over at most MAX_SUM_TERMS integers whose terms are numbers replaced
    by its value: the terms evaluated in mpmath at 90 digits and added exactly (``fsum``),
    kept only when the sum is at least 1e-40 of its largest term (a cancellation beyond
    that is left to ``evalf``), so 50 digits are sure. ``evalf`` tries Euler-Maclaurin on
    such sums: 5 s and an error for ``\\sum_{k=2}^{2000}(2^{k-1}-1)\\binom{2001-k}{1000}``."""
    values = {}
    for s in e.atoms(sympy.Sum):
        if len(s.limits) != 1 or s.function.has(sympy.Sum, sympy.Product, sympy.Integral):
            continue
        k, lo, hi = s.limits[0]
        if not (lo.is_Integer and hi.is_Integer and 0 <= hi - lo < MAX_SUM_TERMS) or (
                s.function.free_symbols - {k}):
            continue
        try:
            import mpmath

            term = sympy.lambdify(k, s.function, [{"binomial": _binomial}, "mpmath"])
            with mpmath.workdps(90):
                terms = [mpmath.mpmathify(term(mpmath.mpf(i))) for i in range(int(lo), int(hi) + 1)]
                total = mpmath.fsum(terms)
                largest = max(abs(t) for t in terms)
        except Exception:  # noqa: BLE001, S112  (a term mpmath cannot take: evalf's turn)
            continue
        if not mpmath.isfinite(total) or total == 0 or mpmath.im(total) != 0 or (
                abs(total) < largest * mpmath.mpf(10) ** -40):
            continue
        values[s] = sympy.Float(mpmath.nstr(total, 80), 80)
    return e.xreplace(values) if values else e


def _binomial(n, k):
    """sympy's binomial at numbers, for mpmath: whole n >= 0 and k exactly (0 for k > n or
    k < 0; mpmath's gamma quotient has poles there), else mpmath's."""
    import math

    import mpmath

    if n == int(n) and k == int(k) and n >= 0:
        return mpmath.mpf(math.comb(int(n), int(k)) if k >= 0 else 0)
    return mpmath.binomial(n, k)


def _numbers_close(a, b, tol) -> bool:
    a, b = _finite_sums(a), _finite_sums(b)
    va, vb = a.evalf(50), b.evalf(50)
    if not (va.is_number and vb.is_number) or va.has(*_SPECIAL) or vb.has(*_SPECIAL):
        return False
    same = _close(va, vb, tol)
    return bool(sympy.simplify(a - b) == 0) if same is None else same


def _values(exprs, syms, k: int):
    subs = {s: sympy.Float(_POINTS[(k + 2 * j) % len(_POINTS)], 30) for j, s in enumerate(syms)}
    out = []
    for e in exprs:
        v = e.evalf(30, subs=subs)
        if not v.is_number or v.has(*_SPECIAL):
            return None
        out.append(v)
    return out


def _identity(a, b, syms, tol) -> bool:
    """*a* = *b* as functions of real symbols: equal at 3 points where they agree, unequal at
    a point where they differ and one side at least is real. A point where both sides are
    non-real is outside the real domain of both and skipped (``\\sqrt{1/n}`` =
    ``\\frac{1}{\\sqrt n}``: equal for n > 0, both imaginary, and different, for n < 0); a
    point whose values are imprecise zeros is skipped. Too few agreeing points: unequal if
    some skipped point differed (``simplify`` there costs seconds on wrong answers with roots
    and logs), else ``simplify``."""
    valid, differed = 0, False
    for k in range(len(_POINTS)):
        vals = _values((a, b), syms, k)
        if vals is None:
            continue
        va, vb = vals
        same = _close(va, vb, max(tol, _POINT_TOL))
        if same:
            valid += 1
            if valid >= 3:
                return True
        elif same is False:
            if va.is_real or vb.is_real:
                return False
            differed = True
    return not differed and sympy.simplify(a - b) == 0


def _proportional(d1, d2, positive: bool) -> bool:
    """True when *d1* is a constant nonzero (with *positive*: positive) multiple of *d2*,
    checked at several fixed points; identically zero sides never match."""
    syms = sorted(d1.free_symbols | d2.free_symbols, key=lambda s: s.name)
    if not syms:
        return False
    ratio, valid = None, 0
    for k in range(len(_POINTS)):
        vals = _values((d1, d2), syms, k)
        if vals is None or abs(vals[1]) < 1e-20:
            continue
        r = vals[0] / vals[1]
        if not r.is_real:
            continue
        if abs(r) < 1e-20 or (positive and r < 0) or (
                ratio is not None and abs(r - ratio) > 1e-15 * max(abs(r), abs(ratio))):
            return False
        ratio, valid = r, valid + 1
        if valid >= 3:
            return True
    return False


def full_compare(gold: str, pred: str) -> tuple[bool, str | None, str]:
    """(equal, why_not, rule) with sympy for the leaves the fast path cannot decide.

    *why_not* is "too_large" or "parse_error" when that stopped a leaf from being compared.
    Runs in the worker process (it imports sympy); callers bound it with a deadline.
    """
    state, trace = State(), Trace()
    ok = compare(prepare(gold), prepare(pred),
                 lambda g, p: leaf_eq(g, p, state, trace), trace)
    if ok:
        return True, None, trace.rule
    why = "too_large" if state.too_large else "parse_error" if state.parse_failed else None
    return False, why, trace.rule
