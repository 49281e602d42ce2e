"""Table-driven equivalence cases for the math verifier: (gold, prediction, expected).

Hand-written over every category of the rules; more than a third expected False. The
predictions here are bare answers (``mode="answer"``); extraction from full responses is in
``EXTRACTION`` (``mode="full"``).
"""

import pytest
from dapo_bench.verifiers.math import MathVerifier

T, F = True, False

CASES = [
    # integers, leading zeros, signs, decimals
    ("18", "18", T), ("023", "23", T), ("-5", "-5", T), ("-5", "5", F), ("27", "27.0", T),
    ("27", "27.5", F), ("0.5", "0.50", T), ("12.5", "12.53", F), ("3", "03.000", T),
    ("100", "99", F), ("\u22125", "-5", T), ("+7", "7", T),
    # fractions, exact rationals vs decimals
    (r"\frac{1}{2}", "0.5", T), (r"\frac12", "1/2", T), (r"\dfrac{1}{2}", r"\tfrac{1}{2}", T),
    (r"\frac{3}{4}", "0.75", T), (r"\frac{1}{8}", "0.125", T), (r"\frac{1}{8}", "0.13", F),
    (r"\frac{2}{4}", r"\frac{1}{2}", T), (r"\frac{1}{2}", r"\frac{1}{3}", F),
    (r"-\frac{32}{9}", r"\frac{-32}{9}", T), (r"-\frac{32}{9}", r"\frac{32}{9}", F),
    # rounded values: a decimal prediction never stands for a non-terminating exact gold
    # (unless printed to 10+ digits); a decimal gold may stand for the exact value it rounds
    (r"\frac{1}{3}", "0.33", F), (r"\frac{1}{3}", "0.333", F), (r"\frac{1}{3}", "0.3", F),
    (r"\frac{2}{3}", "0.667", F), (r"\frac{2}{3}", "0.666", F), ("0.667", r"\frac{2}{3}", T),
    ("0.666", r"\frac{2}{3}", F), ("0.67", r"\frac{2}{3}", F), (r"\frac{1}{12}", "0.08333333333", T),
    ("0.333", r"\frac{1}{3}", T), ("0.5", "0.4", F), (r"\frac{7}{2}", "3.5", T),
    # scientific notation
    (r"1.5\times10^{-3}", "0.0015", T), ("1.5e-3", "0.0015", T), (r"10^{-5}", "0.00001", T),
    (r"10^{-5}", "0.0001", F), (r"6\times10^{23}", "6e23", T), (r"3\times10^{8}", "3e9", F),
    # mixed numbers
    (r"3\frac12", r"\frac{7}{2}", T), (r"3\frac{1}{2}", "3.5", T), (r"2\frac{1}{4}", "2.25", T),
    (r"3\frac12", r"\frac{3}{2}", F), (r"-1\frac{1}{2}", "-1.5", T),
    # percent policy
    (r"50\%", "50", T), (r"50\%", "0.5", T), ("50", r"50\%", T), ("0.5", r"50\%", T),
    ("50", "0.5", F), (r"25\%", r"25\%", T), (r"25\%", "0.2", F), (r"12.5\%", "0.125", T),
    # thousands separators, units, LaTeX noise
    ("1000", "1,000", T), ("1000", "1{,}000", T), ("1000000", "1,000,000", T),
    ("1000", "1,001", F), ("18", r"\$18", T), ("18", "18 dollars", T), ("18", "19 dollars", F),
    ("5", r"5\text{ cm}", T), ("5", r"5 \mathrm{~m}", T), ("90", r"90^\circ", T),
    ("90", r"90^{\circ}", T), ("45", r"90^{\circ}", F), ("4", r"\left(4\right)", T),
    ("4", "4.", T), ("7", r"\mathbf{7}", T), ("8", r"\text{8}", T),
    # roots, pi, symbolic constants
    (r"2\sqrt{2}", r"\sqrt{8}", T), (r"2\sqrt2", r"\sqrt{8}", T), (r"2\sqrt{2}", r"\sqrt{6}", F),
    (r"\frac{\sqrt{3}}{2}", r"\frac{1}{2}\sqrt{3}", T), (r"\frac{\sqrt3}{2}", "0.866", F),
    ("0.866", r"\frac{\sqrt3}{2}", T), (r"\sqrt{2}", "1.41", F), ("1.41", r"\sqrt{2}", T),
    ("1.4", r"\sqrt{2}", F), ("1.42", r"\sqrt{2}", F), (r"\pi", "3.14", F), (r"\pi", "3.14159", F),
    ("3.14", r"\pi", T), ("3.15", r"\pi", F), (r"\frac{\pi}{2}", r"\frac{1}{2}\pi", T),
    (r"548 \pi", r"548\pi", T), (r"548\pi", r"584\pi", F), (r"2-\sqrt{3}", r"-\sqrt{3}+2", T),
    (r"2-\sqrt{3}", r"\sqrt{3}-2", F), (r"5\sqrt[3]{4}", r"\sqrt[3]{500}", T),
    (r"\sqrt{12}", r"3\sqrt{2}", F), (r"e^{2}", r"e^2", T), (r"\ln 2", r"\log 2", F),
    (r"\frac{\sqrt{2}}{2}", r"\frac{1}{\sqrt{2}}", T),
    # polynomials and expressions
    ("x+1", r"\frac{x^2-1}{x-1}", T), (r"(x+1)^2", "x^2+2x+1", T), (r"(x+1)^2", "x^2+x+1", F),
    ("10-4n", "-4n+10", T), ("10-4n", "10+4n", F), ("2x+3", "3+2x", T), ("2x+3", "2t+3", F),
    (r"x^{8}+x^{7}+1", "x^8+x^7+1", T), ("x^2-1", "(x-1)(x+1)", T), ("x^2-1", "(x-1)^2", F),
    (r"\sin^2 x+\cos^2 x", "1", T), (r"\sin 2x", r"2\sin x\cos x", T),
    (r"\sqrt{x^2}", "x", F), (r"mn-\lfloor m/2\rfloor", r"nm-\lfloor m/2 \rfloor", T),
    (r"\frac{1}{2}e^{x^2}+C", r"(1/2) e^{x^{2}}+C", T), (r"\ln|x|+C", r"\ln \left|x\right|+C", T),
    (r"\ln|x|+C", r"\ln|x|", F), ("ab", "ba", T), ("a+b", "a-b", F),
    # equations
    ("3", "x=3", T), ("x=3", "3", T), ("x=3", "x=4", F), ("x=3", "y=3", T),
    ("y=2x+1", "2x+1-y=0", T), ("y=2x+1", "2x+1", T), ("y=2x+1", "y=2x-1", F),
    ("2x+1-y=0", "y=2x+1", T), ("5x-7y+11z+4=0", "-5x+7y-11z-4=0", T),
    ("5x-7y+11z+4=0", "5x-7y+11z-4=0", F), (r"M=\frac{9}{32}\sqrt{2}", r"\frac{9\sqrt2}{32}", T),
    ("k=2", "k = 2.0", T), (r"x \approx 3.14", "3.14", T), ("x^2+y^2=1", "y^2+x^2=1", T),
    ("x^2+y^2=1", "x^2+y^2=2", F), ("f(x)=x+1", "x+1", T),
    # tuples, intervals, sets, unions
    ("(1,2)", "(1,2)", T), ("(1,2)", "(2,1)", F), ("(1,2)", "[1,2]", F), ("(1,2)", "1,2", F),
    ("[0,1)", "(0,1)", F), ("[0,1)", "[0,1)", T), ("[0,1)", r"\left[0, 1\right)", T),
    (r"(-\infty,0]", r"(-\infty, 0]", T), (r"(-\infty,0]", r"(-\infty,0)", F),
    (r"[\frac{1}{2}, 8]", "[0.5,8]", T), (r"[\frac{1}{2}, 8]", "[0.5,9]", F),
    (r"(0,125) \cup (125, \infty)", r"(125,\infty)\cup(0,125)", T),
    (r"(0,125) \cup (125, \infty)", r"(0,\infty)", F), (r"\{1,2,3\}", r"\{3,1,2\}", T),
    (r"\{1,2,3\}", r"\{1,2\}", F), (r"\{1,2\}", "1, 2", T), ("1,2", "2,1", T),
    ("(45,2),(-10,-9)", "(-10,-9),(45,2)", T), ("(45,2),(-10,-9)", "(45,2)", F),
    ("(1,8,19), (2,7,13)", "(2,7,13),(1,8,19)", T), ("(1,8,19), (2,7,13)", "(1,8,19),(2,13,7)", F),
    (r"(\frac{1}{2}, 3)", "(0.5, 3)", T), ("(1, 2, 3)", "(1, 2)", F),
    # lists and partial answers
    ("1331 and 1728", "1728", F), ("1331 and 1728", "1728 and 1331", T),
    ("1331 and 1728", "1331, 1728", T), ("7,-7", "-7,7", T), ("7,-7", "7", F),
    ("-2,0,2", "-2, 0, 2", T), ("-2,0,2", "-2, 2", F), ("1,3", "1,3,5", F), ("25,100,55", "25,100,55", T),
    # plus-minus
    (r"1\pm\sqrt{2}", r"1+\sqrt{2}, 1-\sqrt{2}", T), (r"1\pm\sqrt{2}", r"1-\sqrt2,1+\sqrt2", T),
    (r"1\pm\sqrt{2}", r"1+\sqrt{2}", F), (r"\pm 3", "3,-3", T), (r"\pm 3", "3", F),
    # matrices and vectors
    (r"\begin{pmatrix}1\\2\end{pmatrix}", r"\begin{pmatrix}1\\2\end{pmatrix}", T),
    (r"\begin{pmatrix}-1/3\\2/3\\5/3\end{pmatrix}",
     r"\begin{pmatrix}-\frac{1}{3}\\\frac{2}{3}\\\frac{5}{3}\end{pmatrix}", T),
    (r"\begin{pmatrix}1\\2\end{pmatrix}", r"\begin{pmatrix}2\\1\end{pmatrix}", F),
    (r"\begin{pmatrix}1&2\\3&4\end{pmatrix}", r"\begin{bmatrix}1&2\\3&4\end{bmatrix}", T),
    (r"\begin{pmatrix}1&2\\3&4\end{pmatrix}", r"\begin{pmatrix}1&3\\2&4\end{pmatrix}", F),
    (r"\begin{pmatrix}1&2\\3&4\end{pmatrix}", r"\begin{pmatrix}1&2\end{pmatrix}", F),
    # infinity
    (r"\infty", r"\infty", T), (r"\infty", r"-\infty", F), (r"-\infty", "-oo", T),  # SymPy's oo (v3)
    (r"(-\infty, \infty)", r"(-\infty,\infty)", T),
    # complex numbers
    ("1+2i", "2i+1", T), ("1+2i", "1-2i", F), (r"\frac{4-6i}{13}", r"\frac{4}{13}-\frac{6}{13}i", T),
    (r"\frac{4-6i}{13}", r"\frac{4+6i}{13}", F), ("i", r"\sqrt{-1}", T), ("2i", "2", F),
    # multiple choice
    ("B", r"\text{(B)}", T), ("B", "(B)", T), ("B", "C", F), ("B", r"\textbf{(C)}", F),
    ("(D)", "D", T),
    # text answers
    ("east", r"\text{east}", T), ("east", "East", T), ("east", "west", F),
    ("No solution", "no solution", T), ("odd", "even", F), ("east", "5", F),
]

EXTRACTION = [
    ("5", r"We get $x=5$, so the answer is $\boxed{5}$.", T),
    ("5", r"First \boxed{4}, then correcting: \boxed{5}", T),
    ("5", r"\boxed{5} was wrong, it is \boxed{6}", F),
    (r"\{1,2\}", r"The set is $\boxed{\{1,2\}}$.", T),
    (r"\frac{1}{2}", r"so $\boxed{\frac{1}{2}}$ is it", T),
    (r"\frac{1}{2}", r"\fbox{$\frac12$}", T),
    ("7", r"So \boxed 7.", T),
    ("18", "Janet makes 9 * 2 = 18 dollars.\n#### 18", T),
    ("18", "Janet makes 9 * 2 = 18 dollars.\n#### 19", F),
    ("1/2", r"The final answer is $\frac{1}{2}$. I hope it is correct.", T),
    ("0.5", r"The answer is \(\frac{1}{2}\)", T),
    ("12", "Answer: 12", T),
    ("12", "answer: 13", F),
    ("3.5", "Adding them up gives 3.5. Done", T),
    ("1000", "The total is 1,000", T),
    ("2", "There are many steps. Step 1: 3 apples. Step 2: 2 pears.", T),
    ("3", "There are many steps. Step 1: 3 apples. Step 2: 2 pears.", F),
    (r"(1,2)", r"The point is $\boxed{\left( 1, 2 \right)}$.", T),
    ("1331 and 1728", r"The cubes are $\boxed{1331}$ and $\boxed{1728}$.", T),
    ("1728", r"The cubes are $\boxed{1331}$ and $\boxed{1728}$.", F),
    (r"\frac{x^2-1}{x-1}", r"Simplifying, \[\boxed{x+1}\]", T),
]


@pytest.fixture(scope="module")
def verifier():
    v = MathVerifier(mode="answer", timeout=20.0, workers=1)
    yield v
    v.close()


@pytest.fixture(scope="module")
def full_verifier():
    v = MathVerifier(mode="full", timeout=20.0, workers=1)
    yield v
    v.close()


def test_table_size_and_balance():
    cases = CASES + EXTRACTION
    assert len(cases) >= 150
    assert sum(1 for *_, e in cases if not e) * 3 >= len(cases)


@pytest.mark.parametrize(("gold", "pred", "expected"), CASES)
def test_equivalence(verifier, gold, pred, expected):
    v = verifier.verify(pred, gold)
    assert v.passed is expected, (gold, pred, v)
    assert v.reason in (("ok",) if expected else ("wrong_answer", "parse_error"))


@pytest.mark.parametrize(("gold", "response", "expected"), EXTRACTION)
def test_extraction(full_verifier, gold, response, expected):
    v = full_verifier.verify(response, gold)
    assert v.passed is expected, (gold, response, v)
