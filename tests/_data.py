"""Where the shared benchmark files are: ``../shared/data`` beside the checkout (as CI lays it),
or ``$DAPO_BENCH_TEST_DATA``. Tests that need them skip with a reason when absent.
``code_references(name)``: a code benchmark's reference solutions with their tests (the tests
of tests/verifiers/code/test_code_data.py and the workloads of bench/sandbox_split.py)."""

import json
import os
from pathlib import Path

DATA = Path(
    os.environ.get("DAPO_BENCH_TEST_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


def code_references(name: str) -> tuple[list[str], list]:
    """(programs, tests) of ``humaneval``, ``mbpp`` or ``leetcode``, every problem in order."""
    code = DATA / "code"
    if name == "humaneval":
        rows = [json.loads(line) for line in (code / "humaneval.jsonl").open()]
        return ([r["prompt"] + r["canonical_solution"] for r in rows],
                [{"test": r["test"], "entry_point": r["entry_point"], "prompt": r["prompt"]}
                 for r in rows])
    if name == "mbpp":
        rows = json.loads((code / "mbpp.json").read_text())
        return ([r["code"] for r in rows],
                [{"test_list": r["test_list"], "test_imports": r["test_imports"]} for r in rows])
    if name == "leetcode":
        rows = json.loads((code / "leetcode.json").read_text())
        return [r["solutions"] for r in rows], [r["tests"] for r in rows]
    raise ValueError(f"no reference solutions for {name!r} (humaneval, mbpp, leetcode)")
