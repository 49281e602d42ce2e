"""How many assert-based problems of ../shared/data need what a proxy cannot carry.

    python bench/assert_forms.py [--data DIR]

For HumanEval, MBPP and LeetCode (and LiveCodeBench functional rows, when a file of them is
there), parses every problem's tests as the code verifier does (`parse_tests`, which runs
`scan.proxy_limits`) and counts: refused as ``unsupported_test`` (a callable passed into the
program, an identity check), refused as ``no_tests`` (no assert), handled by the write-back
rule (an argument read again after the call), and helpers the checks take from the program
(HumanEval without its prompt: ``poly`` and the like; with the prompt, as the eval passes it,
they come from the prompt). Prints a Markdown table. No sandbox, no program runs.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from dapo_bench.verifiers.code.formats import parse_tests

DEFAULT = Path(os.environ.get("DAPO_BENCH_TEST_DATA",
                              Path(__file__).resolve().parents[2] / "shared" / "data")) / "code"


def _rows(data: Path) -> dict[str, list]:
    out: dict[str, list] = {}
    he = data / "humaneval.jsonl"
    if he.exists():
        rows = [json.loads(line) for line in he.open()]
        out["HumanEval"] = [{"test": r["test"], "entry_point": r["entry_point"],
                             "prompt": r["prompt"]} for r in rows]
        out["HumanEval (no prompt)"] = [{"test": r["test"], "entry_point": r["entry_point"]}
                                        for r in rows]
    if (data / "mbpp.json").exists():
        out["MBPP"] = [{"test_list": r["test_list"], "test_imports": r["test_imports"]}
                       for r in json.loads((data / "mbpp.json").read_text())]
    if (data / "leetcode.json").exists():
        out["LeetCode"] = [r["tests"] for r in json.loads((data / "leetcode.json").read_text())]
    for name in ("livecodebench.json", "livecodebench.jsonl"):
        p = data / name
        if p.exists():
            rows = [json.loads(line) for line in p.open()] if p.suffix == ".jsonl" else \
                json.loads(p.read_text())
            out["LiveCodeBench"] = [r.get("tests", r) for r in rows]
    return out


def count(tests: list) -> dict[str, int]:
    c = {"problems": len(tests), "assert": 0, "callable_arg": 0, "identity": 0, "no_assert": 0,
         "mutation": 0, "program_helpers": 0}
    for t in tests:
        spec = parse_tests(t)
        if spec.kind != "assert":
            continue
        c["assert"] += 1
        for why in filter(None, spec.unsupported.split(", ")):
            c[why] += 1
        c["mutation"] += spec.mutation
        c["program_helpers"] += len(spec.targets) > 1 and spec.form == "humaneval"
    return c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT, help="folder of the code data files")
    args = ap.parse_args()
    sets = _rows(args.data)
    if not sets:
        raise SystemExit(f"error: no code data files in {args.data}")
    print("| set | problems | assert-based | callable passed in | identity (`is`) | no assert "
          "| mutation (written back) | helpers from the program |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for name, tests in sets.items():
        c = count(tests)
        print(f"| {name} | {c['problems']} | {c['assert']} | {c['callable_arg']} | "
              f"{c['identity']} | {c['no_assert']} | {c['mutation']} | {c['program_helpers']} |")
    if "LiveCodeBench" not in sets:
        print(f"\nLiveCodeBench: no file in {args.data} (its functional tests are call-based, "
              "compared in the parent; no proxy is involved)")


if __name__ == "__main__":
    main()
