"""Math verifier v3, comparison side: plain-text/SymPy answers (class 5 of issue 31), mixed
numbers and symbols' domains (class 6), tiny values (class 7), and the exact canonical form of
``exact.py`` that decides radicals and polynomials without sympy.

Each class has its near misses beside its equal pairs: a rule that said "equal" to everything
would fail half of them. Bare answers (``mode="answer"``); extraction is tested elsewhere.
"""

from __future__ import annotations

import random

import pytest
import sympy
from dapo_bench.verifiers.math import MathVerifier, symbolic
from dapo_bench.verifiers.math.exact import canonical
from dapo_bench.verifiers.math.normalize import parse_number

T, F = True, False

PLAIN_TEXT = [  # gold, prediction, equal (class 5)
    (r"e^{16} - 1", "-1 + exp(16)", T), (r"e^{16} - 1", "-1 + exp(15)", F),
    (r"\dfrac{\pi}{2}", "pi/2", T), (r"\dfrac{\pi}{2}", "pi/3", F), (r"\frac{\pi}{2}", "2/pi", F),
    ("14 - i", "14.0 + -1.0i", T), ("14 - i", "14.0 + 1.0i", F), ("14 - i", "14.5 - i", F),
    (r"-2\pi", "-2*pi", T), (r"-2\pi", "2*pi", F), (r"12\pi", "12*pi", T),
    (r"12\pi", "12*pi*r", F), (r"2\pi r", "2*pi*r", T),
    (r"\frac{\sqrt{2}}{2}", "sqrt(2)/2", T), (r"\frac{\sqrt{2}}{2}", "sqrt(3)/2", F),
    (r"\frac{\sqrt{2}}{2}", "1/sqrt(2)", T), (r"2\sqrt{3}", "2sqrt(3)", T),
    (r"\sqrt{3}", r"\sqrt(3)", T), (r"\frac{-1+\sqrt{5}}{2}", "(-1 + sqrt(5))/2", T),
    (r"\frac{-1+\sqrt{5}}{2}", "(1 + sqrt(5))/2", F),
    ("x^2", "x**2", T), ("x^2", "x**3", F), ("2x^2+1", "2*x**2 + 1", T), ("x^2", "x²", T),
    (r"\sqrt[3]{2}", "2^(1/3)", T), (r"\sqrt[3]{2}", "2^(1/2)", F), ("x^{1/3}", "x**(1/3)", T),
    (r"\infty", "oo", T), (r"-\infty", "-oo", T), (r"\infty", "-oo", F),
    (r"(0,\infty)", "(0, oo)", T), (r"(0,\infty)", "[0, oo)", F),
    ("3+4i", "(3+4j)", T), ("3+4i", "3-4j", F), ("2i", "2*I", T), ("14-i", "14 - I", T),
    ("-1", "II", F),  # a roman numeral, not i*i
    (r"\sqrt{2}i", "sqrt(2)*I", T), (r"\pi i", "pi*I", T), ("x+i", "x+I", F),  # I: a name
    (r"\sqrt{3}", "sqrt3", T), (r"2\sqrt{3}", "2sqrt 3", T),
    (r"\ln 2", "log(2)", T), (r"\ln 2", "log(3)", F), (r"\sin x", "sin(x)", T),
    ("e^{x}", "exp(x)", T), ("e^{x}", "exp(-x)", F), ("1024", "2^10", T),
    # a decimal prediction against an irrational gold: today's rule, whatever the spelling
    (r"\pi", "3.14159", F), (r"\frac{\pi}{2}", "1.5707963267948966", T),
    (r"\frac{\pi}{2}", "1.5708", F), (r"\sqrt{2}", "1.414*1", F),
]

FORMS = [  # class 6: mixed numbers, and symbols' domains
    (r"\frac{40}{9}", "4 4/9", T), ("4", "4 4/9", F), (r"\frac{16}{9}", "4 4/9", F),
    (r"-\frac{40}{9}", "-4 4/9", T), (r"\frac{40}{9}", r"4\frac{4}{9}", T),
    (r"\frac{40}{9}", r"4 \frac{4}{9}", T), (r"\frac{25}{4}", "4 9/4", F),  # not a mixed number
    ("2, 3", "2 3", T),  # two numbers, never 23
    (r"\frac{1}{\sqrt{n}}", r"\sqrt{1/n}", T), (r"\frac{1}{\sqrt{n}}", r"\sqrt{\frac{1}{n}}", T),
    (r"\frac{1}{\sqrt{n}}", r"\sqrt{n}", F), (r"\frac{1}{\sqrt{n}}", r"-\sqrt{1/n}", F),
    (r"\frac{\sqrt{x}}{\sqrt{y}}", r"\sqrt{\frac{x}{y}}", T),
    # one side real where they differ: never equal
    ("x", r"\sqrt{x^2}", F), (r"\ln|x|", r"\ln x", F), (r"\sqrt{x}", r"\sqrt{|x|}", F),
    (r"\sqrt{x-10}", r"-\sqrt{x-10}", F),  # non-real at every point tried: simplify decides
]

TINY = [  # class 7: tiny values compare exactly or relatively
    (r"\frac{1}{2004!}", r"\frac{1}{2006!}", F), (r"\frac{1}{2004!}", "0", F),
    (r"\frac{1}{2004!}", r"\frac{2005\cdot 2006}{2006!}", T),
    ("e^{-100}", "e^{-101}", F), ("e^{-100}", r"\frac{1}{e^{100}}", T),
    ("10^{-40}", "10^{-41}", F), (r"\frac{x}{10^{30}}", r"\frac{x}{10^{31}}", F),
    (r"\frac{x}{10^{30}}", r"10^{-30}x", T), ("0", r"\sin^2(1)+\cos^2(1)-1", T),
    (r"\sin(10^{-30})", r"\sin(10^{-31})", F),
]


@pytest.fixture(scope="module")
def mv():
    with MathVerifier(workers=1, mode="answer") as v:
        yield v


@pytest.fixture(scope="module")
def short_deadline():
    with MathVerifier(workers=1, mode="answer", timeout=1.0) as v:
        yield v


@pytest.mark.parametrize(("gold", "pred", "equal"), PLAIN_TEXT + FORMS + TINY)
def test_forms(mv, gold, pred, equal):
    v = mv.verify(pred, gold)
    assert v.passed is equal, (gold, pred, v)
    assert v.reason == ("ok" if equal else "wrong_answer"), v


def test_sympy_tolerances_are_relative():
    """The sympy path alone (the exact form decides these first in the verifier)."""
    f = sympy.factorial
    assert not symbolic.equal(1 / f(2004), 1 / f(2006))
    assert symbolic.equal(1 / f(2004), sympy.Integer(2005 * 2006) / f(2006))
    x = sympy.Symbol("x")
    assert not symbolic.equal(x / sympy.Integer(10) ** 30, x / sympy.Integer(10) ** 31)
    zero = parse_number("0.0")
    assert not symbolic._decimal_vs_exact(zero, 1 / f(2004), rounded=True)
    assert symbolic._decimal_vs_exact(zero, sympy.sin(1) ** 2 + sympy.cos(1) ** 2 - 1, True)


EXACT = [  # canonical forms: equal, different, and what is left to sympy (None)
    (r"3\sqrt{2}", r"\sqrt{18}", T), (r"3\sqrt{2}", r"\sqrt{19}", F),
    (r"\frac{\sqrt{3}}{2}", r"\frac{3}{2\sqrt{3}}", T), (r"\sqrt{\frac{1}{8}}", r"\frac{\sqrt{2}}{4}", T),
    (r"\sqrt{2}\sqrt{3}", r"\sqrt{6}", T), (r"\sqrt{-2}\sqrt{-3}", r"-\sqrt{6}", T),
    (r"\sqrt{-4}", "2i", T), ("i^2", "-1", T), (r"\frac{1}{i}", "-i", T),
    ("(x+2)(x+3)", "x^2+5x+6", T), ("(x+2)(x+3)", "x^2+5x+7", F), ("xy", "yx", T),
    ("x_1+x_2", "x_2+x_1", T), ("x_1+x_2", "x_1+x_3", F), (r"\alpha\beta", r"\beta\alpha", T),
    (r"2^{-2}", r"\frac{1}{4}", T), ("(x+1)^3", "x^3+3x^2+3x+1", T),
    (r"\pi^2+1", r"1+\pi\cdot\pi", T), (r"\pi^2", r"\pi", F), ("e^2", "e*e", T),
    (r"\sqrt{10^{12}}", "10^6", T),
    ("1.5x", "x", None), (r"\sqrt{x}", "x", None), ("f(x)", "x", None), ("1/2x", "x", None),
    (r"\pi e", r"e\pi", None), ("x2", "2x", None), (r"4\frac{4}{9}", "40/9", None),
    (r"\sqrt{10^{13}+1}", "x", None), ("x^{100}", "x", None), ("(x+y+z)^{30}", "x", None),
    (r"\frac{x}{y}", "x", None), (r"\frac{1}{1+\sqrt{2}}", "x", None), (r"\sin x", "x", None),
    ("5001!", "x", None), (r"\sqrt[3]{2}", "x", None), ("x^{-1}", "x", None),
]


@pytest.mark.parametrize(("a", "b", "equal"), EXACT)
def test_exact_canonical_form(a, b, equal):
    ca, cb = canonical(a), canonical(b)
    if equal is None:
        assert ca is None, a
    else:
        assert ca is not None and cb is not None, (a, b)
        assert (ca == cb) is equal, (a, b)


def _random_expr(rng: random.Random, depth: int = 0) -> str:
    """A random polynomial-with-radicals in LaTeX (exact.py's grammar)."""
    if depth > 2 or rng.random() < 0.3:
        return rng.choice(["x", "y", str(rng.randint(1, 9)), rf"\sqrt{{{rng.randint(2, 12)}}}",
                           r"\pi", "i"])
    a, b = _random_expr(rng, depth + 1), _random_expr(rng, depth + 1)
    op = rng.choice(["+", "-", "*", "pow", "frac"])
    if op == "pow":
        return f"({a})^{{{rng.randint(0, 3)}}}"
    if op == "frac":
        return rf"\frac{{{a}}}{{{rng.randint(1, 7)}}}"
    return f"({a}){op}({b})"


def test_exact_agrees_with_sympy_on_random_pairs():
    """Soundness both ways: wherever exact.py decides, sympy's value agrees (60 digits at a
    generic point; random pairs rarely differ by less than 1e-40 there)."""
    x, y = sympy.symbols("x y")
    point = {x: sympy.Float("0.5772156649015328606065", 60),
             y: sympy.Float("1.3247179572447460259609", 60)}
    rng, decided, equal = random.Random(7), 0, 0
    for _ in range(150):
        a, k = _random_expr(rng), rng.randint(2, 9)
        b = rf"\frac{{{k}({a})}}{{{k}}}" if rng.random() < 0.4 else _random_expr(rng)
        ca, cb = canonical(a), canonical(b)
        if ca is None or cb is None:
            continue
        sa, sb = symbolic.to_sympy(a), symbolic.to_sympy(b)
        decided, equal = decided + 1, equal + (ca == cb)
        d = (sa - sb).evalf(60, subs=point)  # sympy's value at a generic point
        assert (ca == cb) is bool(abs(d) < 1e-40), (a, b, d)
    assert decided > 100 and 30 < equal < decided - 30


def test_parse_number_reads_mixed_numbers_only_as_written():
    assert parse_number(r"4\frac{4}{9}").value * 9 == 40
    assert parse_number("4 4/9") is None  # a spaced form is rewritten by clean(), not here


HOSTILE = [
    "sqrt(" * 600 + "2",  # unclosed calls
    "sqrt(" * 40 + "2" + ")" * 40,  # nested calls (the depth limit is 48)
    "sqrt(2)" * 500, "x**" * 1000 + "2", "exp(" * 45 + "1" + ")" * 45,
    "(x+y+z+w+v)^{60}", r"\frac{1}{(x+y+z)^{64}}", "5000!", r"(\sqrt{2}+\sqrt{3}+\sqrt{5})^{999}",
]


@pytest.mark.parametrize("pred", HOSTILE, ids=[f"hostile{i}" for i in range(len(HOSTILE))])
def test_hostile_plain_text_and_exact_forms_are_bounded(short_deadline, pred):
    v = short_deadline.verify(pred, "5")
    assert not v.passed and v.reason in ("wrong_answer", "too_large", "timeout", "parse_error")
    assert v.seconds < 5
