"""Degenerate model responses: what a collapsing policy writes, at any length.

``SHAPES`` maps a name to a function ``n -> text`` of exactly ``n`` characters (deterministic):
repetition loops of words, sentences, numbers and operators; unbalanced ``\\boxed{``, ``$``,
braces, brackets and parentheses; nested ``\\frac``; digit runs; unicode garbage; marks
(boxes, headings, ``####``, answer phrases) repeated; and a correct long reasoning that ends in
a box. Used by tests/verifiers/math/test_math_deadline.py (every path answers within its
deadline) and bench/verify_math_degenerate.py (time per size and the growth exponent).
"""

from __future__ import annotations

import random


def _loop(unit: str):
    return lambda n: (unit * (n // len(unit) + 1))[:n]


def _count(n: int) -> str:
    out, k, size = [], 0, 0
    while size < n:
        out.append(str(k))
        size += len(out[-1]) + 1
        k += 1
    return " ".join(out).ljust(n)[:n]


def _digits(n: int) -> str:
    rng = random.Random(n)
    return "".join(rng.choice("0123456789") for _ in range(n))


def _unicode(n: int) -> str:
    rng = random.Random(n)
    return "".join(chr(rng.randint(0xA1, 0x2FFF)) for _ in range(n))


def _nested_frac(n: int) -> str:
    k = max(1, (n - 20) // 16)
    s = "\\frac{1}{" * k + "2" + "}" * k
    return ("$" + s + "$" + " " * n)[:n]


def _boxed_reasoning(n: int) -> str:
    """A correct long reasoning: steps with inline math, then the answer boxed (gold 42)."""
    step = ("We compute $3 \\cdot 4 = 12$ and then add $30$, so the partial sum is $42$. "
            "Next we check the case $x = 2$: it gives $2^2 + 1 = 5$.\n")
    end = "\n\nTherefore the answer is $\\boxed{42}$."
    body = (step * ((n - len(end)) // len(step) + 1))[:max(0, n - len(end))]
    return body + end


SHAPES = {
    "words": _loop("the answer is not clear yet "),
    "sentence": _loop("So the answer is 5. "),
    "count": _count,
    "plus_zero": lambda n: ("10" + " + 0" * (n // 4 + 1))[:n],
    "list": _loop("1, "),
    "numbers_lines": _loop("12\n"),
    "operators": _loop("+-*/^=<>"),
    "equals_chain": _loop("= 5 "),
    "digits": _digits,
    "unicode": _unicode,
    "open_box": _loop("\\boxed{"),
    "open_dollar": _loop("$x "),
    "dollars": _loop("$1$ "),
    "dollar_pad": _loop("$ 9 "),
    "escaped_dollars": lambda n: ("\\\\$" * n)[:n - 4] + "$x$.",
    "open_display": _loop("\\[ "),
    "open_paren_math": _loop("\\( x "),
    "paren_math_lines": _loop("\\(a\n"),
    "open_begin": _loop("\\begin{align}"),
    "braces": _loop("{"),
    "close_braces": _loop("}"),
    "parens": _loop("("),
    "brackets": _loop("[(\\{"),
    "backslashes": _loop("\\"),
    "nested_frac": _nested_frac,
    "frac_loop": _loop("\\frac{1}{"),
    "boxes": _loop("\\boxed{1} "),
    "hashes": _loop("#### 5 "),
    "headings": _loop("## Answer\n5\n"),
    "final_answer": _loop("final answer is "),
    "bold": _loop("**5** "),
    "stars": _loop("*"),
    "newlines": _loop("\n"),
    "chat_tokens": _loop("<|im_end|>"),
    "check_loop": _loop("Let's check: 2 + 2 = 4. "),
    "box_then_junk": lambda n: ("\\boxed{5}" + " ## x" * n)[:n],
    "boxed_reasoning": _boxed_reasoning,
}
