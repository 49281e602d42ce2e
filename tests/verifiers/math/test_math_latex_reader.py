"""verifiers/math/latex.py: the values it reads come out exactly as latex2sympy2 builds them.

Each text is read both ways and the two expressions compared node by node, in their argument
order (``srepr`` sorts the arguments of sums and products; ``==`` on unevaluated ones does
not). The shapes it must leave to latex2sympy2 (the grammar reads them another way, or is
ambiguous there) must come back None. bench/latex_reader.py runs the same check over the
answers of public corpora.
"""

from __future__ import annotations

import pytest
import sympy
from dapo_bench.verifiers.math import latex, symbolic

READ = [
    "2", "0.5", ".5", "007", "x", "xy", "2x", "-2x", "2-3x", "a-b+c", "x^{2}", "x^2", "2^{10}",
    "2^34", "(x+1)^{2}", "\\frac{1}{2}", "\\frac{2}{4}", "\\frac{x}{2}", "\\dfrac{a+b}{c}",
    "\\tfrac{3}{4}", "2\\frac{1}{2}", "-2\\frac{1}{2}", "2(3)", "1/2", "1/2x", "a/b/c", "a*b/c",
    "a\\cdot b", "a\\times b", "6\\div 3", "\\sqrt{2}", "3\\sqrt{2}", "\\sqrt[3]{x}",
    "\\sqrt[n]{x}", "\\pi", "2\\pi r", "\\pi r^{2}", "\\pic^{2}", "\\lambdakT", "e", "e^{x}",
    "e^x", "2e^{it}", "e^{-\\frac{t}{RC}}", "ex", "I", "xI", "i", "x_{0}", "x_0", "x_{12}",
    "P_{0}^{2/5}", "\\rho_{0}r_{0}^{2}", "\\omega_n", "v_{o}", "\\sin(x)", "\\sin^{2}(x)",
    "\\sin^{-1}(x)", "\\cos(\\pi t+\\pi/3)", "\\arctan(x)", "\\tanh(x)", "\\ln(2)", "\\ln2",
    "\\ln 2+i\\pi/3", "\\log(x)", "\\log_{2}(8)", "\\log_{2}8", "\\exp(x)", "\\sin x",
    "[x+1]y", "{x}+1", "(a+b)(a-b)", "(2+2i)x", "\\frac{4A}{3+3i}e^{it}", "d^{2}", "2d",
    "\\frac{2\\pi c^{2}R^{2}}{d^{2}\\lambda^{5}}", "-\\frac{2B}{I}\\omega+\\frac{1}{I}T",
    "k(4k^2+k-1)", "2k(k+1)", "x(x+1)^2", "(x)", "[x]", "(2+2i)", "[x+1]", "(-2)",
    "[\\frac{n^2+2n-1}{2}]", "\\omega(t+1)", "3n^{2}-5n+2", "\\frac{(k^2-4)^2}{4k\\cdot(k^2+4)}", "\\sinh x", "x_{0}\\cos(\\omega t)",
]

LEFT = [
    "f(x)", "f(2x)", "a(b)(c)", "f_{1}(x)", "x^{2}(y)", "\\lambda^{5}[x]", "\\omega(t)", "I(0)",
    "I^2", "I_0", "4k(k^2+4)",
    "\\sin(x)y", "\\ln 2x", "\\sin x/2", "{x}", "(1,2)", "dx", "2dx", "d\\theta",
    "x^T", "A^{T}", "floor", "trees", "1E5", "2E", "50\\%", "x!", "\\infty", "x=1", "1,2",
    "\\pm 1", "\\gamma", "\\left(x\\right)", "\\arcsinh(x)", "\\text{cm}", "x'",
    "x^{2}^{3}", "x^2_1", "3_2", "\\sum_{k=1}^{n}k", "|x|", "\\binom{4}{2}", "1.", "x₀", "",
    "\\frac12", "\\sqrt2",
]


def _ordered(e) -> str:
    if isinstance(e, sympy.Basic) and e.args and not e.is_Atom:
        return f"{type(e).__name__}({','.join(_ordered(a) for a in e.args)})"
    return sympy.srepr(e)


@pytest.mark.parametrize("text", READ)
def test_read_equals_latex2sympy(text: str) -> None:
    ours = latex.read(text)
    assert ours is not None, text
    assert _ordered(ours) == _ordered(symbolic.antlr_parser()(text))


@pytest.mark.parametrize("text", LEFT)
def test_left_to_latex2sympy(text: str) -> None:
    assert latex.read(text) is None


def test_to_sympy_reads_both_ways() -> None:
    """to_sympy takes this reader's value where it has one and latex2sympy2's elsewhere."""
    assert symbolic.to_sympy("2x+1") == sympy.Add(
        sympy.Mul(2, sympy.Symbol("x"), evaluate=False), 1, evaluate=False)
    assert symbolic.to_sympy("f(x)") == sympy.Function("f")(sympy.Symbol("x"))
    assert symbolic.to_sympy("e^{i\\pi}") == sympy.exp(sympy.I * sympy.pi)  # i, e replaced


def test_long_input_is_bounded() -> None:
    assert latex.read("+".join(["x"] * 1000)) is None  # beyond MAX_TOKENS: latex2sympy2's
    assert latex.read("(" * 300 + "x" + ")" * 300) is None
