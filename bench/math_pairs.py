"""Generated answer pairs for bench/verify_math.py (and verify_math_corpus.py's ``--speed``):
full responses with the answer in ``\\boxed{}``, half of them right, every pair with its own
gold (no cache helps). Rows: (gold, response, expected)."""

from __future__ import annotations

import random
from fractions import Fraction


def pairs_mixed(rng: random.Random, n: int) -> list[tuple[str, str, bool]]:
    out = []
    makers = [_integer, _dec_frac, _fraction, _root, _tuple, _interval, _set, _poly, _equation,
              _solution]
    for i in range(n):
        gold, right, wrong = makers[i % len(makers)](rng)
        ok = i % 2 == 0
        out.append((gold, respond(rng, right if ok else wrong), ok))
    return out


def pairs_simple(rng: random.Random, n: int) -> list[tuple[str, str, bool]]:
    out = []
    for i in range(n):
        gold, right, wrong = (_integer if i % 4 < 2 else _decimal)(rng)
        ok = i % 2 == 0
        out.append((gold, respond(rng, right if ok else wrong), ok))
    return out


def pairs_kinds(rng: random.Random, n: int) -> list[tuple[str, str, bool]]:
    """The six kinds of issue 31 in equal shares, half right: boxed integer, \\dfrac vs
    \\frac, tuple, interval, a\\sqrt{b} vs \\sqrt{a^2 b}, a reordered polynomial (4-digit
    numbers: every pair is new, no cache helps)."""
    makers = [_integer4, _dfrac, _tuple4, _interval4, _radical, _reordered]
    out = []
    for i in range(n):
        gold, right, wrong = makers[i % len(makers)](rng)
        ok = (i // len(makers)) % 2 == 0
        out.append((gold, respond(rng, right if ok else wrong), ok))
    return out


def _integer4(rng):
    v = rng.randint(1000, 9999)
    return str(v), str(v), str(v + rng.choice([-1, 1, 10]))


def _dfrac(rng):
    p, q = rng.randint(1000, 9999), rng.randint(1000, 9999)
    return rf"\frac{{{p}}}{{{q}}}", rf"\dfrac{{{p}}}{{{q}}}", rf"\dfrac{{{p + 1}}}{{{q}}}"


def _tuple4(rng):
    a, b = rng.randint(1000, 4999), rng.randint(5000, 9999)
    return f"({a},{b})", rf"\left( {a}, {b} \right)", f"({b},{a})"


def _interval4(rng):
    a, b = rng.randint(-9999, -1000), rng.randint(1000, 9999)
    return f"[{a},{b})", rf"\left[{a}, {b}\right)", f"({a},{b})"


def _radical(rng):
    a, b = rng.randint(1000, 9999), rng.choice([2, 3, 5, 6, 7, 10, 11])
    return rf"{a}\sqrt{{{b}}}", rf"\sqrt{{{a * a * b}}}", rf"\sqrt{{{(a + 1) * (a + 1) * b}}}"


def _reordered(rng):
    c = [rng.randint(1000, 9999) for _ in range(4)]
    gold = f"{c[0]}x^3+{c[1]}x^2+{c[2]}x+{c[3]}"
    return gold, f"{c[3]}+{c[2]}x+{c[1]}x^2+{c[0]}x^3", f"{c[3]}+{c[2]}x+{c[1] + 1}x^2+{c[0]}x^3"


def respond(rng: random.Random, ans: str) -> str:
    a, b = rng.randint(2, 99), rng.randint(2, 99)
    return (f"We compute ${a} + {b} = {a + b}$ first. Then, simplifying, the result follows.\n"
            f"Therefore the final answer is $\\boxed{{{ans}}}$.")


def _integer(rng):
    v = rng.randint(-999, 9999)
    return str(v), str(v), str(v + rng.choice([-1, 1, 10]))


def _decimal(rng):
    v = Fraction(rng.randint(1, 9999), 100)
    return f"{float(v):.2f}", f"{float(v):.2f}0", f"{float(v) + 0.01:.2f}"


def _dec_frac(rng):
    q = rng.choice([2, 4, 5, 8, 16, 20, 25])
    p = rng.randint(1, 4 * q)
    v = Fraction(p, q)
    return rf"\frac{{{v.numerator}}}{{{v.denominator}}}", str(float(v)), str(float(v) + 0.01)


def _fraction(rng):
    p, q, k = rng.randint(1, 50), rng.randint(2, 50), rng.randint(2, 5)
    v = Fraction(p, q)
    return (rf"\frac{{{v.numerator}}}{{{v.denominator}}}",
            rf"\frac{{{k * v.numerator}}}{{{k * v.denominator}}}",
            rf"\frac{{{v.numerator + 1}}}{{{v.denominator}}}")


def _root(rng):
    a, b = rng.randint(2, 9), rng.choice([2, 3, 5, 6, 7, 10, 11])
    return rf"{a}\sqrt{{{b}}}", rf"\sqrt{{{a * a * b}}}", rf"\sqrt{{{a * a * b + 1}}}"


def _tuple(rng):
    a, b = rng.randint(-20, 20), rng.randint(21, 40)
    return f"({a},{b})", rf"\left( {a}, {b} \right)", f"({b},{a})"


def _interval(rng):
    a, b = rng.randint(-20, 0), rng.randint(1, 20)
    return f"[{a},{b})", rf"\left[{a}, {b}\right)", f"({a},{b})"


def _set(rng):
    xs = rng.sample(range(1, 30), 3)
    return (r"\{" + ",".join(map(str, xs)) + r"\}", r"\{" + ",".join(map(str, xs[::-1])) + r"\}",
            r"\{" + ",".join(map(str, xs[:2])) + r"\}")


def _poly(rng):
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    return (f"(x+{a})(x+{b})", f"x^2+{a + b}x+{a * b}", f"x^2+{a + b}x+{a * b + 1}")


def _equation(rng):
    a = rng.randint(2, 50)
    return f"x={a}", str(a), str(a + 1)


def _solution(rng):
    a, b = rng.randint(2, 30), rng.choice([2, 3, 5, 7])
    return (rf"\frac{{\sqrt{{{b}}}}}{{{a}}}", rf"\frac{{1}}{{{a}}}\sqrt{{{b}}}",
            rf"\frac{{\sqrt{{{b}}}}}{{{a + 1}}}")
