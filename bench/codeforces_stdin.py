"""The codeforces stdin workload that bench/sandbox.py and bench/sandbox_split.py both time.

Real codeforces problems from ../shared/data/code/codeforces.json (or
``$DAPO_BENCH_TEST_DATA/code``), each with a short hand-written stdin/stdout solution (below);
every multi-case test is also split into one-case tests (``t = 1``), as TACO-style suites have
many small tests. Imports the verifier's test parser only when called, so that
bench/sandbox_split.py's sides get it from the tree they put first on ``sys.path``.
Not covered: timing anything (the two scripts do).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

CODE_DATA = Path(os.environ.get("DAPO_BENCH_TEST_DATA",
                                Path(__file__).resolve().parents[2] / "shared" / "data")) / "code"
SOLUTIONS = {  # codeforces.json index -> solution; each test case is one input line
    0: "for _ in range(int(input())):\n    x, y = map(int, input().split())\n"
       "    print(min(x, y), max(x, y))\n",
    199: "for _ in range(int(input())):\n    print(sum(map(int, input().strip())))\n",
    180: "import sys\ninput = sys.stdin.readline\nfor _ in range(int(input())):\n"
         "    n = int(input())\n    print(n // 4 + (n % 4) // 2)\n",
    96: "for _ in range(int(input())):\n    a, b = input().split()\n"
        "    print(b[0] + a[1:], a[0] + b[1:])\n",
    105: "for _ in range(int(input())):\n    xs = list(map(int, input().split()))\n"
         "    print(max(xs) - min(xs))\n",
    43: "for _ in range(int(input())):\n    n, m = map(int, input().split())\n"
        "    print('Yes' if n >= m and (n - m) % 2 == 0 else 'No')\n",
    97: "for _ in range(int(input())):\n    n = int(input())\n    print(3 if n == 3 else 2)\n",
    265: "for _ in range(int(input())):\n    a, b = map(int, input().split())\n"
         "    print('YES' if a % 2 == 0 and (a > 0 or b % 2 == 0) else 'NO')\n",
}
def workload() -> tuple[list[str], list[list[str]], list[list[str]]]:
    """(programs, inputs, outputs): one program per solved problem, its stdin tests."""
    from dapo_bench.verifiers.code.formats import parse_tests

    rows = json.loads((CODE_DATA / "codeforces.json").read_text())
    programs, inputs, outputs = [], [], []
    for idx, prog in SOLUTIONS.items():
        spec = parse_tests(rows[idx]["tests"])
        ins, outs = list(spec.cases), list(spec.expected)
        for inp, out in zip(spec.cases, spec.expected):
            lines, olines = inp.strip().split("\n")[1:], out.strip().split("\n")
            if len(lines) == len(olines):
                ins += [f"1\n{ln}\n" for ln in lines]
                outs += [f"{o}\n" for o in olines]
        programs.append(prog)
        inputs.append(ins)
        outputs.append(outs)
    return programs, inputs, outputs
