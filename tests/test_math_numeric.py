"""The in-process screen (verifiers/math/numeric.py) only ever says "unequal", and only where
sympy's check at points says so too; whatever it does not read goes to sympy."""

import pytest
from dapo_bench.verifiers.math import MathVerifier, item
from dapo_bench.verifiers.math.check import prepare
from dapo_bench.verifiers.math.numeric import differ

APART = [("x^{2}", "x^{3}"), ("\\sin(x)", "\\cos(x)"), ("\\sqrt{x}", "x"),
         ("\\frac{\\pi}{3}", "\\frac{\\pi}{4}"), ("e^{-\\frac{t}{RC}}I_{0}", "I_{0}e^{-\\frac{t}{R}}"),
         ("\\arctan(\\frac{1}{2})", "\\frac{\\pi}{6}"), ("\\sin^{2}(\\theta)", "\\sin(\\theta)"),
         ("2\\cos(2t)", "\\cos(2t)+1"), ("\\sqrt[3]{x+2}", "\\sqrt{x+2}"), ("xy", "x+y")]
NOT_READ = [
    ("3.14", "\\pi"),  # decimals: sympy's rounding rules (gold 3.14 is pi)
    ("\\log(x)", "\\ln(x)"),  # the base of \log
    ("f(x)", "g(x)"), ("f'", "g"),  # a function applied? a derivative?
    ("1/2x", "x"),  # 1/(2x) or x/2
    ("\\sin x", "\\cos x"),  # how far an unbraced argument reaches
    ("(x+10^{15})-10^{15}", "x"),  # equal, and the float rounding is larger than any gap
    ("(x+1)^{2}", "x^{2}+2x+1"), ("\\sin^{2}(x)+\\cos^{2}(x)", "1"),  # equal: sympy's to say
    ("x₀", "x"), ("|x|", "x"), ("5!", "120"),
]


@pytest.mark.parametrize(("gold", "pred"), APART)
def test_apart_values_differ(gold, pred):
    assert differ(prepare(gold).text, prepare(pred).text) is True


@pytest.mark.parametrize(("gold", "pred"), NOT_READ)
def test_what_is_not_read_goes_to_sympy(gold, pred):
    assert differ(prepare(gold).text, prepare(pred).text) is None


def test_sympy_agrees_where_the_screen_decides(monkeypatch):
    """The same pairs without the screen: sympy in a worker says unequal for each."""
    monkeypatch.setattr(item, "_differ", lambda gold, pred, trace: False)
    with MathVerifier(workers=1, timeout=30) as v:
        got = v.verify_batch([f"\\boxed{{{p}}}" for _, p in APART], [g for g, _ in APART])
    assert [x.passed for x in got] == [False] * len(APART)
    assert not any("numeric" in x.details["rule"] for x in got)  # decided elsewhere
    assert sum("sympy" in x.details["rule"] for x in got) >= 6, got
