"""The in-process check at points (verifiers/math/numeric.py) decides only where sympy's check
at points decides the same way; whatever it does not read, and any constant, goes to sympy."""

import pytest
from dapo_bench.verifiers.math import MathVerifier, item
from dapo_bench.verifiers.math.check import prepare
from dapo_bench.verifiers.math.numeric import compare, differ

APART = [("x^{2}", "x^{3}"), ("\\sin(x)", "\\cos(x)"), ("\\sqrt{x}", "x"),
         ("\\frac{\\pi}{3}", "\\frac{\\pi}{4}"), ("e^{-\\frac{t}{RC}}I_{0}", "I_{0}e^{-\\frac{t}{R}}"),
         ("\\arctan(\\frac{1}{2})", "\\frac{\\pi}{6}"), ("\\sin^{2}(\\theta)", "\\sin(\\theta)"),
         ("2\\cos(2t)", "\\cos(2t)+1"), ("\\sqrt[3]{x+2}", "\\sqrt{x+2}"), ("xy", "x+y"),
         ("\\sqrt{x^{2}}", "x"),  # unequal where x < 0 (real there)
         ("3.1", "\\pi"), ("12.5", "\\sqrt{2}")]  # decimals 1% apart or more
NOT_READ = [
    ("3.14", "\\pi"), ("0.5", "\\frac{1}{2}"),  # decimals within 1%: sympy's rounding rules
    ("\\log(x)", "\\ln(x)"),  # the base of \log
    ("f(x)", "g(x)"), ("f'", "g"),  # a function applied? a derivative?
    ("1/2x", "x"),  # 1/(2x) or x/2
    ("\\sin x", "\\cos x"),  # how far an unbraced argument reaches
    ("(x+10^{15})-10^{15}", "x"),  # equal, and the float rounding is larger than any gap
    ("\\sin^{2}(1)+\\cos^{2}(1)", "1"), ("e^{\\pi\\sqrt{163}}", "262537412640768744"),  # constants
    ("x₀", "x"), ("|x|", "x"), ("5!", "120"),
]


def test_sympy_agrees_where_the_screen_decides(monkeypatch):
    """The same pairs without the screen: sympy in a worker says unequal for each."""
    monkeypatch.setattr(item, "_numeric", lambda gold, pred, trace: None)
    with MathVerifier(workers=1, timeout=30) as v:
        got = v.verify_batch([f"\\boxed{{{p}}}" for _, p in APART], [g for g, _ in APART])
    assert [x.passed for x in got] == [False] * len(APART)
    assert not any("numeric: " in x.details["rule"].replace("sympy: numeric", "")
                   for x in got)  # decided elsewhere
    assert sum("sympy" in x.details["rule"] for x in got) >= 6, got


EQUAL = [("(x+1)^{2}", "x^{2}+2x+1"), ("\\sin^{2}(x)+\\cos^{2}(x)", "1+0x"),
         ("\\frac{x^{2}-1}{x-1}", "x+1"), ("e^{-\\frac{t}{RC}}I_{0}", "I_{0}e^{-\\frac{t}{RC}}"),
         ("\\sqrt{2}\\cos(2t-\\frac{\\pi}{4})", "\\cos(2t)+\\sin(2t)"),
         ("\\sqrt{\\frac{1}{n}}", "\\frac{1}{\\sqrt{n}}")]  # (both non-real for n < 0: skipped)
NOT_EQUAL_HERE = [("x", "x+10^{-15}")]  # apart by less than 1e-12: sympy's 30 digits decide


# what each screen says on each table: apart values differ (True), what it does not read is
# left to sympy (None); functions equal at every point are equal, pairs too close are left
SCREENS = ([("differ", g, p, True) for g, p in APART] + [("differ", g, p, None) for g, p in NOT_READ]
           + [("compare", g, p, True) for g, p in EQUAL]
           + [("compare", g, p, None) for g, p in NOT_EQUAL_HERE])


@pytest.mark.parametrize(("screen", "gold", "pred", "want"), SCREENS)
def test_the_screen_decides_or_leaves_to_sympy(screen, gold, pred, want):
    fn = {"differ": differ, "compare": compare}[screen]
    assert fn(prepare(gold).text, prepare(pred).text) is want
