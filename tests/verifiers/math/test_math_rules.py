"""Every rule of math verifier v2 (issue 13) with the pair that shows it: (gold, prediction,
expected), judged as the CLI does (default ``mode="full"``, no flag), and the extraction
rules as (response, extracted answer, how it was found). One line per case."""

import pytest
from dapo_bench.verifiers.math import extract_answer
from dapo_bench.verifiers.math.extract import find_answer, gold_answer

T, F = True, False

RULES = [
    # a short prediction is the answer: no digits out of \frac, \sqrt, ^{}, _{}
    (r"\frac72", r"3\frac12", T), ("2", r"3\frac12", F), ("1/3", r"$\frac13 $", T),
    ("13", r"$\frac13 $", F), ("10/9", r"\frac{10}{9}", T), ("9", r"\frac{10}{9}", F),
    ("3", r"\sqrt{3}", F), ("2", "x^{2}", F), ("1", "a_{1}", F),
    # unboxed final answers
    (r"\frac{7}{2}", r"So \[x=\frac{7}{2}.\]", T),
    (r"12\sqrt{2}", r"Therefore the area is $12\sqrt{2}$ square units.", T),
    (r"-\frac{1}{4}", r"Hence the minimum value is $-\frac{1}{4}$.", T),
    ("12", "Checking again. The answer is: 12", T), ("18", "So she earns 18.\n#### 18", T),
    ("42", "Adding the two parts, the total is **42**", T),
    ("7", "There were 3 red and 4 blue, 7 in all", T),
    ("120", "Final Answer: The volume of $ABCDEFGH$ is 120. I hope it is correct.", T),
    # several boxes: one group is a list; a hedge fails a single-valued gold
    ("2, -3", r"$\boxed{2}$ and $\boxed{-3}$", T), ("2, -3", r"$\boxed{2}$", F),
    ("2", r"$\boxed{2}$ and $\boxed{-3}$", F), ("2", r"\boxed{2}, \boxed{2}", T),
    ("6", r"\boxed{5} was wrong, it is \boxed{6}", T),
    ("5", r"\boxed{5} was wrong, it is \boxed{6}", F),
    ("(2, 2), (6, 2)", r"$$\boxed{(2, 2)} \quad \text{and} \quad \boxed{(6, 2)}$$", T),
    ("10455", r"so $\boxed{255}$ more. Final Answer: The final answer is $10,455$.", T),
    # labelled answers
    ("(3,2)", "(p,q)=(3,2)", T), ("(3,2)", "p=3, q=2", T), ("(3,2)", "p=2, q=3", F),
    ("4, 5", "AB=4, CD=5", T), ("AB=4, CD=5", "4, 5", T), ("AB=4, CD=5", "5, 4", F),
    ("11:21", "V_1:V_2=11:21", T), ("V_{1}:V_{2}=11:21", "11:21", T),
    ("2,-3", r"x=2 \text{ or } x=-3", T), ("2,-3", r"x=2 \text{ or } x=3", F),
    ("x^2+1", "f(x)=x^2+1", T), ("x^2+1", "f(x)=x^2-1", F), ("x=3, y=1", "y=1, x=3", T),
    ("x=3, y=1", "x=1, y=3", F), (r"\frac{1}{\sqrt{6}}", r"\frac{NO}{BO}=\frac{1}{\sqrt{6}}", T),
    ("1", "|AB|=1", T), ("-10,-8,4", "a=4, -8, -10", T), ("0", r"1 = \zzz = x = 0", T),
    # relations: inequalities as relations, chains, relation vs interval (asymmetric)
    (r"x \ge 5", r"x\geq 5", T), (r"x \ge 5", r"x\geqslant 5", T), (r"x \ge 5", r"5 \leq x", T),
    (r"x \ge 5", "x>5", F), (r"x \ge 5", r"x \le 5", F), ("x<1", "-x>-1", T),
    ("-1<x<3", "3>x>-1", T), ("-1<x<3", r"-1<x\leq 3", F), (r"x\ne 2", r"x \neq 2", T),
    (r"x\ge5", r"[5,\infty)", T), (r"[5,\infty)", r"x\ge5", T), ("-1<x<3", "(-1,3)", T),
    ("(-1,3)", "-1<x<3", T), (r"x\ge5", r"(5,\infty)", F), (r"x \ne 2", r"(-\infty,2)\cup(2,\infty)", T),
    # digit separators
    ("1000", r"1,\!000", T), ("12345", "12{,}345", T), ("1000", r"1\,000", T),
    ("1000000", "1,000,000", T), ("15", "1,5", F), ("1.5", "1,5", T), ("1000.99", "1000,99", T),
    ("1, 5", "1,5", T), ("23", "2 3", F),
    # multiple choice, both directions
    ("B", r"\text{(B)}", T), ("C", "(C)", T), ("D", r"\textbf{(D) }7", T),
    (r"\text{(B) } 12", "B", T), (r"\text{(B) } 12", "12", T), (r"\text{(B) } 12", "C", F),
    # ratios and clock times are ordered pairs, not divisions
    ("12:00", "1:00", F), ("12:00", "12:00", T), ("3:2", "2:3", F), ("3:2", r"\frac32", T), ("3:2", r"\frac23", F),
    # traps that stay unequal
    ("0", "10^{-7}", F), ("1000000", "1000001", F), (r"\pi", "3.14159", F), ("3.14159", r"\pi", T),
    ("2", r"\pm2", F), (r"\pm2", "2", F), (r"\pm2", "2, -2", T), ("1, 2, 3", "1, 3", F),
    ("x=3", "0=0", F), ("x=0", "x-x=0", F), ("2x+z=1", "1", F), ("7=11a+c", "11a+c", F),
    ("4", "x^2=4", F), ("120", r"5\times 6\times 4=120", T), ("101", "a+2z=2z+a=101", T),
    # a finite sum of numbers is added up term by term (60 and 90 digits must agree)
    ("55", r"\sum_{k=1}^{10}k", T), ("56", r"\sum_{k=1}^{10}k", F),
    ("2^{10}", r"\sum_{k=0}^{10}\binom{10}{k}", T), ("0", r"\sum_{k=0}^{100}(-1)^k\binom{100}{k}", T),
    ("2^{2000}", r"\sum_{k=2}^{2000}(2^{k-1}-1)\cdot\binom{2001-k}{1000}", F),
    # golds parsed like predictions
    ("$7$", "7", T), (r"\(\boxed{6 \text{ and } 8}\)", "6,8", T),
    (r"\boxed{1} papers and \boxed{2} bins", r"$\boxed{1,2}$", T),
    (r"Thus $x = \boxed{1,-2}$.", "-2, 1", T),
]

EXTRACT = [
    (r"3\frac12", r"3\frac12", "bare"), (r"$\frac13 $", r"$\frac13 $", "bare"),
    ("x_{2}", "x_{2}", "bare"), ("18 dollars", "18 dollars", "bare"), ("AZYUK2A", "AZYUK2A", "bare"),
    (r"So \[x=\frac{7}{2}.\]", r"x=\frac{7}{2}.", "sentence"),
    (r"the area is $12\sqrt{2}$ square units", r"12\sqrt{2}", "sentence"),
    (r"The probability is $\frac{5}{36}$, since there are 36 outcomes.", r"\frac{5}{36}", "sentence"),
    ("The answer is A.", "A", "phrase"), ("#### 72", "72", "####"),
    ("**Final Answer**\n5", "5", "heading"), ("Total: **42 apples** in the basket", "42 apples", "bold"),
    (r"Step one uses \frac{10}{9} of it. Step two cuts 3 pieces and x^{2} more", "3", "last_number"),
    (r"We use $\frac{10}{9}$ of it, so 3 remain", r"\frac{10}{9}", "sentence"),
    (r"We know $x^2=9$ here and it is fine", "9", "sentence"),
    ("So $10,200 + $255 = $10,455. Final Answer: The final answer is $10,455$.", "10,455", "phrase"),
    ("The pair $(7, 6)$ solves it. <|im_start|>user\nWhat is 2+2?", "(7, 6)", "sentence"),
    ("Answer $ \n 9 \n $", None, "none"), ("The time is 12:00 now, we are done", "12:00", "last_number"),
    (r"The answer is \\boxed{\\frac{1}{2}}", r"\frac{1}{2}", "box"),
]


def test_rules_in_one_batch(math_verifier):
    got = math_verifier.verify_batch([p for _, p, _ in RULES], [g for g, _, _ in RULES])
    wrong = [(g, p, e, v.extracted, v.details.get("rule")) for (g, p, e), v in zip(RULES, got)
             if v.passed is not e]
    assert wrong == []


@pytest.mark.parametrize(("text", "answer", "how"), EXTRACT)
def test_extraction_rule(text, answer, how):
    assert find_answer(text) == (answer, how)
    assert extract_answer(text) == answer


def test_gold_answer_reads_golds_like_predictions():
    assert gold_answer("$7$") == "$7$"  # bare: taken whole (delimiters go in cleaning)
    assert gold_answer(r"\(\boxed{6 \text{ and } 8}\)") == r"6 \text{ and } 8"
    assert gold_answer(r"\boxed{1} papers and \boxed{2} bins") == "1, 2"
    assert gold_answer("The final answer is $28\\%$. I hope it is correct.") == "28\\%"
    prose = "The function is increasing on its whole domain."
    assert gold_answer(prose) == prose  # a prose gold stays prose


def test_rule_is_explained(math_verifier):
    v = math_verifier.verify(r"$\boxed{3:4}$", "4:3")
    assert (v.passed, v.extracted, v.details["answer_from"]) == (False, "3:4", "box")
    assert v.details["rule"] == "ratio: number"
    v = math_verifier.verify("$1 < x < 4$", "(1,4)")
    assert v.details["rule"] == "interval vs relation: same form"
    v = math_verifier.verify("$1 < x < 4$", "[1,4)")
    assert (v.passed, v.details["rule"]) == (False, "interval vs relation: brackets [) vs ()")
