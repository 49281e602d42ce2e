"""Competition-shape pairs, written fresh for v2: (prediction, gold, expected verdict).

Each prediction is shaped like what competition models write (a bare answer, a sentence, a
box or several, a labelled or relational answer, a choice letter, a ratio, a rounded value),
through the CLI default (``mode="full"``: detection, no flag). Every verdict is clear; the
test demands all right, so in particular no false "equal". ``bench/verify_math.py`` runs the
same pairs beside math-verify. One line per pair: add a case by adding a line.
"""

from _math_rows import misjudged

T, F = True, False

PAIRS = [
    # a short prediction is the answer: no digits pulled out of \frac, ^{} or _{}
    (r"3\frac{1}{2}", r"\frac{7}{2}", T),
    (r"$\frac{2}{5}$", "0.4", T),
    (r"\frac{12}{7}", "7", F),
    ("2^{10}", "1024", T),
    ("x_{3}", "3", F),
    (r"\sqrt{50}", r"5\sqrt{2}", T),
    # unboxed responses: final sentence, answer phrases, ####, bold, last number
    (r"Solving, we get \[x=\frac{9}{4}.\]", r"\frac{9}{4}", T),
    (r"Thus the perimeter is $18\sqrt{3}$ centimeters.", r"18\sqrt3", T),
    (r"Completing the square, the smallest value is $-\frac{9}{8}$.", r"-\frac98", T),
    ("After simplifying we find the answer is: $42$", "42", T),
    ("She has 14 apples left.\n#### 14", "14", T),
    ("Adding everything, Tom pays **$36**.", "36", T),
    ("We count 3 cases, then 4 more, so 7 arrangements in total.", "7", T),
    (r"The probability is $\frac{5}{36}$, since there are 36 outcomes.", r"\frac{5}{36}", T),
    (r"Plugging in, $x = 4$ and $y = -1$, so the solution is $(4, -1)$.", "(4,-1)", T),
    ("The point is $(-1, 4)$.", "(4,-1)", F),
    # several boxes
    (r"The roots are $\boxed{2}$ and $\boxed{-3}$.", "2, -3", T),
    (r"The roots are $\boxed{2}$ and $\boxed{-3}$.", "2", F),
    (r"One root is $\boxed{2}$.", "2, -3", F),
    (r"First I got \boxed{10}. Checking again, that overcounts. The answer is \boxed{12}.", "12", T),
    (r"\boxed{6} or \boxed{8}", "6", F),
    ("$\\boxed{5}$\n\n**Final Answer**\n\\boxed{5}", "5", T),
    # labelled answers
    ("$(a, b) = (4, 7)$", "(4,7)", T),
    ("$a = 4, b = 7$", "(4,7)", T),
    ("$a = 7, b = 4$", "(4,7)", F),
    ("$BC = 6$ and $AC = 8$", "6, 8", T),
    ("$CD = 12$, $AB = 5$", "AB=5, CD=12", T),
    ("$AB = 12, CD = 5$", "AB=5, CD=12", F),
    ("$m:n = 2:5$", "2:5", T),
    ("$x = -1$ or $x = 6$", "-1, 6", T),
    ("$g(t) = 3t^2 - 1$", "3t^2-1", T),
    ("$x = 3$", "x=3, y=1", F),
    ("$k = 5$", "4", F),
    # relations and intervals
    (r"$x \geqslant -2$", r"x \ge -2", T),
    (r"$-2 \le x$", r"x\geq -2", T),
    ("$x > -2$", r"x \ge -2", F),
    ("$4 > x > 1$", "1<x<4", T),
    (r"$x \in (1, 4)$", "1 < x < 4", T),
    ("$1 < x < 4$", "(1,4)", T), ("$1 < x < 4$", "[1,4)", F),
    (r"$[3, \infty)$", r"x \geq 3", T),
    (r"$x \le 3$", "x<3", F),
    ("$2x < 6$", "x<3", T),
    # digit separators
    (r"The population is $2,\!016$.", "2016", T),
    (r"$\boxed{45{,}000}$", "45000", T),
    (r"$1\,250$", "1250", T),
    ("The total is 3,000,000 dollars.", "3000000", T),
    ("$2,5$", "25", F),
    ("$2,5$", "2, 5", T),
    # multiple choice
    (r"The correct option is $\textbf{(C)}$.", "C", T),
    (r"$\boxed{\text{(A)}}$", "A", T),
    (r"$\boxed{\textbf{(D) }18}$", "D", T),
    (r"\boxed{B}", r"\text{(B) } 40", T),
    (r"\boxed{E}", r"\text{(B) } 40", F),
    (r"\boxed{(C)}", "B", F),
    # ratios and clock times are ordered pairs
    (r"$\boxed{4:3}$", "4:3", T),
    (r"$\boxed{3:4}$", "4:3", F),
    (r"The clock shows $\boxed{10:00}$.", "1:00", F),
    (r"$\boxed{2:30}$", "2:30", T),
    # traps that stay unequal
    (r"$\boxed{10^{-9}}$", "0", F),
    (r"$\boxed{999999}$", "1000000", F),
    (r"$\boxed{3.1416}$", r"\pi", F),
    (r"$\boxed{1.7321}$", r"\sqrt{3}", F),
    (r"$\boxed{\pm 5}$", "5", F),
    (r"$\boxed{5}$", r"\pm 5", F),
    (r"$\boxed{1, 2}$", "1, 2, 3", F),
    (r"$\boxed{0 = 0}$", "x=2", F),
    (r"$\boxed{x - x = 0}$", "x = 0", F),
    (r"$\boxed{0.3333}$", r"\frac13", F),
    # golds written like predictions
    (r"\boxed{7}", "$7$", T),
    (r"$\boxed{3}$ and $\boxed{5}$", r"\(\boxed{3 \text{ and } 5}\)", T),
    (r"\boxed{4, 9}", r"\boxed{4} cats and \boxed{9} dogs", T),
]


def test_size_and_balance():
    assert len(PAIRS) >= 70
    assert sum(1 for *_, e in PAIRS if not e) * 3 >= len(PAIRS)


def test_all_right_in_one_batch(math_verifier):
    """The whole set in one batch: every verdict right, so 0 false "equal"."""
    assert all(len(pair) == 3 for pair in PAIRS)
    assert misjudged(math_verifier, PAIRS) == []
