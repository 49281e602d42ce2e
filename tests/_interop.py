"""What the framework tests (tests/*/test_interop_*.py, ``make test-interop``) share: the items
each framework's own code scores through dapo-bench, and their verdicts from ``dapo-bench
verify`` (the CLI, in a subprocess), which every framework's rewards must equal.

An item is a response as a policy wrote it (its text), its gold as a dataset holds it, and the
verl ``data_source`` of its row. Math and code items are mixed; among the code items, a
HumanEval completion that holds only the function's body (the program is the tests' prompt
followed by it) and a program without a fence.
"""

from __future__ import annotations

import json
import subprocess
import sys

from dapo_bench.verifiers.base import VERIFIERS

CLI = [sys.executable, "-m", "dapo_bench.cli"]
# the versions these tests were run with (pinned by `make test-interop`)
VERL_VERSION, OPENRLHF_VERSION = "0.9.1", "0.11.2"

ADD = {"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "10\n"]}
HUMANEVAL = {"prompt": "import math\n\n\ndef f(x):\n    \"\"\"Twice x.\"\"\"\n",
             "test": "def check(candidate):\n    assert candidate(2) == 4\n", "entry_point": "f"}
MBPP = {"test_list": ["assert g(3) == 9", "assert g(4) == 16"]}

# (data_source, response, gold, verifier)
ITEMS = [
    ("openai/gsm8k", "48 + 24 = 72 clips.\n#### 72", "72", "math"),
    ("lighteval/MATH", "So the answer is $\\boxed{\\frac{1}{2}}$.", "0.5", "math"),
    ("aime2024", "I think the answer is 7.", "8", "math"),
    ("math_dapo", "We get \\boxed{(x+1)^2}.", "x^2+2x+1", "math"),
    ("math", "No idea.", "3", "math"),
    ("codecontests", "```python\na, b = map(int, input().split())\nprint(a + b)\n```",
     json.dumps(ADD), "code"),
    ("my_code_set", "Easy:\n```python\nprint(3)\n```", ADD, "code"),
    ("humaneval", "    return 2 * x\n", HUMANEVAL, "code"),
    ("mbpp", "def g(x):\n    return x * x", MBPP, "code"),
]
SOURCES = {"my_code_set": "code"}  # reward_kwargs.sources: a data source verl's names lack
PASSED = [True, True, False, True, False, True, False, True, True]  # the CLI's, item by item


def cli_verdicts(tmp_path, items=ITEMS) -> list[dict]:
    """``dapo-bench verify``'s row for each item, in order: math items as the response and its
    gold, code items as the program the code verifier's one completion rule takes from the
    response (``input_from``: the CLI runs a program as given) and its tests."""
    rows: list[dict | None] = [None] * len(items)
    for name in dict.fromkeys(v for *_, v in items):
        cls = VERIFIERS.get(name)
        pf, gf = cls.fields
        idx = [i for i, it in enumerate(items) if it[3] == name]
        src = tmp_path / f"cli-{name}.jsonl"
        src.write_text("".join(json.dumps({pf: cls.input_from(items[i][1], items[i][2]),
                                           gf: items[i][2]}) + "\n" for i in idx))
        out = subprocess.run([*CLI, "verify", str(src), "--verifier", name], check=True,
                             capture_output=True, text=True, timeout=600)
        for i, line in zip(idx, out.stdout.splitlines()):
            rows[i] = json.loads(line)
    if items is ITEMS:
        assert [r["passed"] for r in rows] == PASSED, rows
    return rows
