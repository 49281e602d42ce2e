"""Where models write their final answer: one test per format family, through the verifier.

Each group reproduces the *shape* of a family's real outputs (written for this file, not copied
from the sources; each group names where the shape comes from). Every group has right and wrong
answers, so a rule that passes everything fails here. ``FORMATS`` is also read by
``bench/verify_math_corpus.py``. Rows: (response, gold, passed, answer_from).
"""

import pytest
from _math_rows import misjudged
from dapo_bench.verifiers.math.extract import find_answer

T, F = True, False

FORMATS = {
    # openai/prm800k (GPT-4 solutions to MATH, human-rated): steps, then "# Answer" and the
    # answer alone, usually without math delimiters.
    "prm800k_heading": [
        ("The distance is $\\sqrt{(5-3)^2+(9-2)^2}=\\sqrt{53}$.\n\n# Answer\n\n\\sqrt{53}",
         "\\sqrt{53}", T, "heading"),
        ("The distance is $\\sqrt{(5-3)^2+(9-2)^2}=\\sqrt{53}$.\n\n# Answer\n\n\\sqrt{53}",
         "53", F, "heading"),
        ("So the rotated number is $7i - 2.$\n\n# Answer\n\n7i - 2", "-2+7i", T, "heading"),
        ("I get $x=-1$ and $y=6$.\n\n# Answer\n\n(-1,6)", "(-1, 6)", T, "heading"),
        ("I get $x=-1$ and $y=6$.\n\n# Answer\n\n(-1,6)", "6", F, "heading"),
        ("The ratio is $3:4$, i.e. three quarters.\n\n# Answer\n\n\\frac{3}{4}", "\\frac34", T,
         "heading"),
        ("Reducing, I get 4/9 of the total.\n\n# Answer\n\n4/9", "\\frac{3}{4}", F, "heading"),
        ("There is no real root.\n\n# Answer\n\nNo solution", "No solution", T, "heading"),
        ("Since $f(-x) = f(x)$ for all $x$:\n\n# Answer\n\nThe function is even.", "even", T,
         "heading"),
        ("Since $f(-x) = f(x)$ for all $x$:\n\n# Answer\n\nThe function is even.", "odd", F,
         "heading"),
    ],
    # lm-evaluation-harness minerva_math (Lewkowycz et al. 2022 prompt): a fixed closing line.
    "minerva": [
        ("So $x = 10,455$.\nFinal Answer: The final answer is $10,455$. I hope it is correct.",
         "10455", T, "phrase"),
        (("Hence the sum is $\\frac{1}{2}$.\nFinal Answer: The final answer is $\\frac{1}{2}$. "
          "I hope it is correct."), "0.5", T, "phrase"),
        ("Final Answer: The final answer is $(2,-3)$. I hope it is correct.", "(2,3)", F,
         "phrase"),
    ],
    # Qwen2.5-Math / DeepSeek-R1 style: a "**Final Answer**" heading, then a boxed display.
    "final_answer_box": [
        ("Adding, $12 + 30 = 42$.\n\n**Final Answer**\n\\[\n\\boxed{42}\n\\]", "42", T, "box"),
        (("</think>\nThe roots are $2$ and $3$.\n\n**Final Answer**\nThe roots are "
          "$\\boxed{2}$ and $\\boxed{3}$."), "2, 3", T, "box"),
        ("Adding, $12 + 30 = 42$.\n\n**Final Answer**\n\\[\n\\boxed{42}\n\\]", "24", F, "box"),
    ],
    # Llama 3.x Instruct on MATH: "## Step k:" sections, then "The final answer is: $\boxed{X}$"
    # (and without the box when the model forgets it).
    "llama_steps": [
        (("## Step 1: Expand\n$(x+1)^2 = x^2+2x+1$.\n\n## Step 2: Evaluate at 3\n$16$.\n\n"
          "The final answer is: $\\boxed{16}$"), "16", T, "box"),
        ("## Step 1: Count\nThere are $4 \\cdot 5 = 20$ pairs.\n\nThe final answer is: 20",
         "20", T, "phrase"),
        ("## Step 1: Count\nThere are $4 \\cdot 5 = 20$ pairs.\n\nThe final answer is: 20",
         "5", F, "phrase"),
    ],
    # GSM8K's own solutions and models fine-tuned on them: a "####" line, taken whole.
    "gsm8k_hashes": [
        ("She sells 16 - 3 - 4 = <<16-3-4=9>>9 eggs.\nShe makes 9 * 2 = $<<9*2=18>>18.\n#### 18",
         "18", T, "####"),
        ("Multiply the conjugates to get the product.\n#### 6+9i", "6+9i", T, "####"),
        ("Multiply the conjugates to get the product.\n#### 6+9i", "9", F, "####"),
        ("So the total is 1,200 dollars.\n#### 1,200", "1200", T, "####"),
    ],
    # MetaMath (meta-math/MetaMath) and WizardMath: "The answer is: X" as the last sentence.
    "answer_is": [
        ("We have $2x = 10$, so $x = 5$.\nThe answer is: 5", "5", T, "phrase"),
        ("Solving, we get the value.\nThe answer is: x = 5", "5", T, "phrase"),
        ("We have $2x = 10$.\nThe answer is: \\frac{3}{4}", "0.75", T, "phrase"),
        ("We have $2x = 10$.\nThe answer is: 4", "5", F, "phrase"),
    ],
    # Markdown answers of chat models: bold labels and bold answers.
    "markdown": [
        ("Solving the system gives both coordinates.\n\n**Final answer:** (-1, 6)",
         "(-1,6)", T, "heading"),
        ("Solving the system gives both coordinates.\n\n**Final answer:** (-1, 6)",
         "6", F, "heading"),
        ("Combining like terms, the value follows.\n\n**Answer:** $\\frac{3}{4}$", "3/4", T,
         "heading"),
        ("## Final Answer\n\nThe area is $12\\sqrt{2}$ square units.", "12\\sqrt2", T,
         "heading"),
        ("Putting it together, the total is **18**.", "18", T, "sentence"),
        ("Both cases agree.\n\n**Answer: 5**", "5", T, "heading"),
        ("Both cases agree.\n\n**Final Answer**\n\nThus, $x = 5$.", "5", T, "heading"),
        ("**Answer:**\n\nWe have 3 apples and 4 pears.\n\nSo the total is $7$.", "4", F,
         "sentence"),
        ("**Answer:**\n\nWe have 3 apples and 4 pears.\n\nSo the total is $7$.", "7", T,
         "sentence"),
        ("Both cases agree.\n\n**Final Answer**\n\nThe minimum value is 1/2, attained at x=1.",
         "\\frac12", T, "heading"),
        ("Both cases agree.\n\n**Final Answer**\n\nThe minimum value is 1/2, attained at x=1.",
         "1", F, "heading"),
    ],
    # openai/simple-evals' math prompt: the last line is "Answer: $ANSWER".
    "answer_line": [
        ("Simplify the fraction $\\frac{6}{8}$.\nAnswer: 3/4", "\\frac{3}{4}", T, "heading"),
        ("Simplify the fraction $\\frac{6}{8}$.\nAnswer: 3/4", "4", F, "heading"),
        ("Solve for $x$.\nANSWER: $x = -2$", "-2", T, "heading"),
    ],
    # openai/prm800k phase 1 (GPT-4, step by step, one step a line, no marker): the final
    # statement gives the answer, often as "quantity = value" or "there are N ...", and a
    # remark may follow it.
    "chat_statement": [
        ("We have $m=5$ and $n=24$.\nSo, $m+n=29$.\nAnd that is our final answer.", "29", T,
         "sentence"),
        ("We have $m=5$ and $n=24$.\nSo, $m+n=29$.\nAnd that is our final answer.", "24", F,
         "sentence"),
        (("So 8!/2!6! is equal to 8*7/2 which is 28.\nSo there are 28 ways to choose 2 cooks "
         "from a group of 8 people."), "28", T, "sentence"),
        (("So 8!/2!6! is equal to 8*7/2 which is 28.\nSo there are 28 ways to choose 2 cooks "
         "from a group of 8 people."), "8", F, "sentence"),
        ("The averages are -1 and 6.\nTherefore, the midpoint is (-1,6).\nRight.", "(-1,6)", T,
         "sentence"),
        ("Then $DM=4$.\nSo $BD = DM - BM = 4 - 1 = 3$.\nCorrect. $BD=3$.", "3", T, "sentence"),
        ("Then $DM=4$.\nSo $BD = DM - BM = 4 - 1 = 3$.\nCorrect. $BD=3$.", "4", F, "sentence"),
        ("The normal is $\\langle -1,2,1\\rangle$.\nSo the plane is $x-2y+z-1=0$.",
         "x-2y+z-1=0", T, "sentence"),
        ("Since 1995 is divisible by 3,\nthe remainder when $9^{1995}$ is divided by 7 is 1.",
         "1", T, "sentence"),
        ("Since 1995 is divisible by 3,\nthe remainder when $9^{1995}$ is divided by 7 is 1.",
         "7", F, "sentence"),
        ("The probability is $\\frac{5}{36}$, since there are 36 outcomes.", "\\frac{5}{36}", T,
         "sentence"),
        ("The slope is $-\\frac{2}{3}$.\nSo the answer is B.\nOk, I will type the letter B.", "B",
         T, "phrase"),
        ("The slope is $-\\frac{2}{3}$.\nSo the answer is B.\nOk, I will type the letter B.", "C",
         F, "phrase"),
        ("So we get $x=5$.\nI hope the answer is correct.", "5", T, "sentence"),
        ("Each costs $0.65$.\nSo three dozen of these apples cost $\\$$23.40.", "23.40", T,
         "sentence"),
    ],
    # openai/prm800k phase 1 again: the answer, then a check or a restatement of something
    # else ("Let's check", "We can verify"), or "That's our answer." pointing back at it.
    "chat_check_after": [
        ("Dividing by 3, $x = 4$.\nLet's check: $3(4) = 12$, which is right.", "4", T,
         "sentence"),
        ("Dividing by 3, $x = 4$.\nLet's check: $3(4) = 12$, which is right.", "12", F,
         "sentence"),
        ("Hence $k=7$.\nRight. And we can verify that $2^7=128$ is bigger than $100$.", "7", T,
         "sentence"),
        ("So the answer is $12$.\nRight. And the sum of its digits is $3$.", "12", T, "phrase"),
        ("So the answer is $12$.\nRight. And the sum of its digits is $3$.", "3", F, "phrase"),
        ("The answer is $\\frac{1}{2}$.\nThat is because there are $2$ equally likely cases.",
         "\\frac12", T, "phrase"),
        ("We get $a = 2$, so $a^2 + 1 = 5$.\nThat's our answer.\nWhat a nice problem.", "5", T,
         "sentence"),
        ("We get $a = 2$, so $a^2 + 1 = 5$.\nThat's our answer.\nWhat a nice problem.", "2", F,
         "sentence"),
    ],
    # Base models and short-prompt chats: the answer alone on the last line, no marker.
    "last_line": [
        ("The rotation multiplies by $i$: $(7+2i)i$.\n\n7i - 2", "-2+7i", T, "last_line"),
        ("The rotation multiplies by $i$: $(7+2i)i$.\n\n7i - 2", "7", F, "last_line"),
        ("Hence the result is as computed.\n\n\\frac{3}{4}", "0.75", T, "last_line"),
    ],
}

# The last marked answer wins, whatever its kind (docs/math-verifier.md, "Precedence").
PRECEDENCE = [
    ("First try: $\\boxed{6+8i}$. Checking the product again:\n#### 6+9i", "6+9i", "####"),
    ("#### 12\nWait, I dropped a term; redoing it: $\\boxed{14}$.", "14", "box"),
    ("So \\boxed{5}.\n\n# Answer\n\n7", "7", "heading"),
    ("# Answer\n\n7\n\nCorrection: the final answer is $5$.", "5", "phrase"),
    ("So the answer is $\\boxed{5}$. The answer is correct.", "5", "box"),  # a comment, no mark
    ("The sum is $5$.\n\n### Answer Explanation\nWe added $2$ and $3$ to get $5$.", "5", "sentence"),
    # an answer phrase in the last three sentences beats a later unmarked statement; a later
    # answer phrase beats it; "That's our answer." ties the answer to the sentence before it
    ("So the answer is $8$.\nIndeed $2^3 = 8$, so $n = 3$ works.", "8", "phrase"),
    ("So the answer is $8$.\nNo wait, the answer is $9$.", "9", "phrase"),
    ("The answer is $x=2$.\nThen $y = 5$.\nThat's our answer.", "y = 5", "sentence"),
]

# Never a piece of an expression: a whole one or no answer.
NO_FRAGMENT = [
    ("The distance works out to \\sqrt{53} units in the end", None),
    ("the point is (-1, 6) and nothing else follows", None),
    ("so a share of \\frac{3}{4} goes to each", None),
    ("the candidates are 1, 2, 3, 4 and 5", "1, 2, 3, 4 and 5"),  # whole: a list, fails "5"
    ("So that is our final answer. Right, let us move on.", None),
    ("I think 5 works, so that is our final answer. Right, let me check it.", "5"),
]


def _rows():
    return [(family, *row) for family, rows in FORMATS.items() for row in rows]


@pytest.mark.parametrize("family", sorted(FORMATS))
def test_format_family(math_verifier, family):
    assert all(len(row) == 4 for row in FORMATS[family])  # each row names its answer_from
    assert misjudged(math_verifier, FORMATS[family]) == []


@pytest.mark.parametrize(("text", "answer", "how"), PRECEDENCE)
def test_last_marked_answer_wins(text, answer, how):
    assert find_answer(text) == (answer, how)


@pytest.mark.parametrize(("text", "answer"), NO_FRAGMENT)
def test_no_fragment_and_no_word(text, answer):
    assert find_answer(text)[0] == answer


def test_a_list_of_candidates_does_not_pass(math_verifier):
    text = "It could be 3, or 4, or 5, or 6; I am not sure which one is right."
    assert not any(math_verifier.verify(text, g).passed for g in ("3", "4", "5", "6"))


def test_cut_off_response_is_credited_for_a_heading_only(math_verifier):
    text = "The answer follows.\n\n# Answer\n\n42"
    assert math_verifier.verify(text, "42", finished=False).passed
    v = math_verifier.verify("Adding the parts we get 42 and then we", "42", finished=False)
    assert (v.passed, v.reason) == (False, "truncated")
