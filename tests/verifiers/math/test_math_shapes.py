"""Answer shapes of math verifier 4.0 (issue 42), each family with right and wrong answers, so a
rule that passes everything fails here. Rows: (response, gold, passed). The shapes follow the
conventions of the public sources they come from (named in each family): competition answer
keys state a named quantity's value (AIME/AoPS "m+n=37"), MATH writes solution sets sorted and
intervals in interval notation, OlympiadBench asks several quantities in one problem (its
``is_multiple_answer``), and trigonometric solution families carry their integer parameter.
"""

import pytest
from _math_rows import misjudged

T, F = True, False

SHAPES = {
    # competition keys and solutions state what a named quantity is: the value is the answer;
    # an equation in one unknown is an equation to solve, never its right side
    "named_quantity": [
        ("\\boxed{|r-s| = 16}", "16", T), ("\\boxed{E(2020, 1993) = 76}", "76", T),
        ("So $\\boxed{x + y = 4027}$.", "4027", T), ("\\boxed{x + y = 4027}", "4026", F),
        ("\\boxed{m+n=37}", "37", T), ("\\boxed{a_1 + a_2 = 5}", "5", T),
        ("\\boxed{x^2 = 4}", "4", F), ("\\boxed{2x+1 = 9}", "9", F),
        ("The circle is $x^2 + y^2 = 13$.", "x^2+y^2=13", T),
        ("So the circle is x^2 + y^2 = 13.", "x^2 + y^2 = 13", T),
        ("\\boxed{13}", "x^2+y^2=13", F), ("\\boxed{x^2 + y^2 = 12}", "x^2+y^2=13", F),
    ],
    # a bare gold list is a set of values (OlympiadBench writes "all values of x" unsorted, in
    # the order its solution found them); a tuple in parentheses may list them
    "lists_and_tuples": [
        ("\\boxed{(1, 2, 3)}", "1, 2, 3", T), ("\\boxed{(3, 2, 1)}", "1,2,3", T),
        ("\\boxed{(1, 2, 4)}", "1,2,3", F), ("\\boxed{[1, 2]}", "1, 2", F),
        ("\\boxed{(2, 4, 3)}", "2, 4, 3", T), ("\\boxed{-2, -1, 2}", "-1,2,-2", T),
        ("\\boxed{-7, -1, 1, 7}", "1,-1,7,-7", T), ("\\boxed{2, 3, 5}", "2,4,3", F),
        # a gold that repeats one value is values in turn ("a and b are both -2"), not a set
        ("\\boxed{(-2, -2)}", "-2,-2", T), ("\\boxed{a = -2, b = -2}", "-2,-2", T),
        ("\\boxed{-2}", "-2,-2", F), ("\\boxed{-2, -2}", "-2", T),
        ("\\boxed{\\pm 1, \\pm 7}", "1, -1, 7, -7", T), ("\\boxed{\\pm 1, 7}", "1,-1,7,-7", F),
    ],
    # a relation solved for one variable and its interval are the same set, both ways
    "intervals_and_relations": [
        ("\\boxed{\\frac12 \\le x \\le 8}", "[\\frac12, 8]", T),
        ("\\boxed{\\frac12 < x \\le 8}", "[\\frac12, 8]", F),
        ("\\boxed{k < -5}", "(-\\infty,-5)", T), ("\\boxed{k \\le -5}", "(-\\infty, -5)", F),
        ("\\boxed{x^2 < 4}", "(-2, 2)", F), ("\\boxed{(-2, 2)}", "-2 < x < 2", T),
        ("\\boxed{-2 \\le x \\le 7}", "x \\in [-2,7]", F), ("\\boxed{[-2, 7]}", "x \\in [-2,7]", T),
    ],
    # a ratio of two parts is the fraction it makes; a time is not
    "ratios": [
        ("\\boxed{1:2}", "\\frac12", T), ("\\boxed{2:1}", "\\frac{1}{2}", F),
        ("The ratio is $\\boxed{3:4}$.", "0.75", T), ("\\boxed{12:00}", "12", F),
    ],
    # OlympiadBench-style problems ask for several quantities; solutions box each in its own
    # sentence (the last k boxes together, for a gold of k values)
    "parts_boxed_apart": [
        ("The maximum value is $\\boxed{2}$ and the minimum value is $\\boxed{1}$.", "1, 2", T),
        ("The maximum is $\\boxed{2}$.\n\nThe minimum is $\\boxed{1}$.", "1,2", T),
        ("The maximum is $\\boxed{2}$.\n\nThe minimum is $\\boxed{3}$.", "1,2", F),
        ("The maximum is $\\boxed{2}$.\n\nThe minimum is $\\boxed{1}$.", "1", T),
        ("First $\\boxed{2}$, then $\\boxed{1}$.", "1", F),  # joined: a hedge, a list
    ],
    # one answer said two ways is one answer; the count a final sentence opens with is its
    # answer when the math after it only says what the counted things do
    "said_twice_or_counted": [
        ("The answer is $\\frac{1}{2}$, or equivalently $0.5$.", "\\frac12", T),
        ("\\boxed{\\frac12 \\text{, or equivalently } 0.5}", "0.5", T),
        ("\\boxed{\\frac13 \\text{, or equivalently } 0.5}", "0.5", F),
        ("Therefore, 20 workers are needed to produce \\(\\frac{720}{K}\\) widgets.", "20", T),
        ("Therefore, 20 workers are needed to produce \\(\\frac{720}{K}\\) widgets.", "720", F),
    ],
    # LaTeX slips: a backslash before digits (a dropped "$"), a family of solutions with its
    # integer parameter stated after it
    "latex_slips": [
        ("\\boxed{\\15}", "15", T), ("\\boxed{\\16}", "15", F),
        ("\\boxed{x = \\frac{\\pi}{4} + k\\pi \\text{ for } k \\in \\mathbb{Z}}",
         "\\frac{\\pi}{4}+k\\pi", T),
        ("\\boxed{\\frac{\\pi}{4} + 2k\\pi, k \\in \\mathbb{Z}}", "\\frac{\\pi}{4}+k\\pi", F),
        ("\\boxed{2k\\pi \\text{ for any integer } k}", "2k\\pi", T),
    ],
    # physics answers (Minerva) carry SI units after the number; read against a plain number
    # only (alone, "5m" may be a product)
    "units": [
        ("**2.78 m**", "2.78", T), ("\\boxed{9.8 m/s^2}", "9.8", T), ("\\boxed{700°C}", "700", T),
        ("\\boxed{3.5 \\times 10^{3} kg}", "3500", T), ("\\boxed{5m}", "6", F),
        ("\\boxed{5x}", "5", F),
    ],
    # a numeric gold asks for a number: an answer that still has its unknowns is not it (even
    # one that simplifies to it is not simplified), and a cut-off answer is no value
    "unknowns_left": [
        ("\\boxed{f(t)}", "-1", F), ("\\boxed{2^x}", "256", F),
        ("\\boxed{\\sin^2 x + \\cos^2 x}", "1", F), ("\\boxed{\\sum_{k=1}^{3} k^2}", "14", T),
        ("\\boxed{\\sin^2(1) + \\cos^2(1)}", "1", T), ("\\boxed{24 +}", "24", F),
    ],
    # a computation written out to its result is its result; an identity's sides are equal
    "identities": [
        ("So the final answer is $(x-2)(x+2)(x^2+4) = x^4 - 16$.", "x^4 - 16", T),
        ("\\boxed{\\frac{2F_k}{F_k} = 2}", "2", T), ("\\boxed{(x-2)(x+2) = x^2 - 4}", "x^2+4", F),
    ],
    # piecewise-constant functions agree at a few generic points without being equal
    "integer_functions": [
        ("\\boxed{\\left\\lfloor \\frac{n}{2} \\right\\rfloor}", "\\lfloor\\frac{2n-1}{5}\\rfloor", F),
        ("\\boxed{\\lceil \\frac{n}{2} \\rceil}", "\\lfloor \\frac{n+1}{2} \\rfloor", T),
    ],
    # what a response says that is not an answer: a task set (a base model echoing or
    # inventing a problem), a remark on the answers, a plural "final answers are:"
    "not_answers": [
        ("Evaluate $(1+2i)6-3i$. \\boxed{}. \\boxed{}. \\boxed{}.", "6+9i", F),
        ("We get $9$. What is $(\\frac12)^{100} \\cdot 2^{100}$?", "1", F),
        ("So the total is $7$. I hope these answers are helpful.", "7", T),
        ("Thus, the final answers are $x = 15$ and $y = 11$.", "15, 11", T),
        ("Thus, the final answers are $x = 15$ and $y = 11$.", "15", F),
        ("\\boxed{±1, ±7}", "1,-1,7,-7", T),
    ],
    # 2.x passed these and 3.x did not (issue 42's regressions)
    "regressions": [
        ("So the answer is \\boxed{\\text{No}}.", "no", T), ("\\boxed{\\text{Yes}}", "no", F),
        ("\\boxed{\\text{odd}}", "Odd", T), ("\\boxed{ab}", "AB", F),
        ("So \\boxed{12}.\n\n## Answer\n\n##", "12", T),
        ("So \\boxed{12}.\n\n## Answer\n\n**13**", "12", F),
    ],
}


@pytest.mark.parametrize("family", sorted(SHAPES))
def test_shape_family(math_verifier, family):
    rows = SHAPES[family]
    assert {passed for *_, passed in rows} == {True, False}  # right and wrong in every family
    assert all(len(row) == 3 for row in rows)
    assert misjudged(math_verifier, rows) == []
