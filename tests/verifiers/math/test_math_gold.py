"""Every gold answer of the shared math benchmarks verifies as equal to itself.

Two checks per gold: the bare gold as a prediction (``mode="answer"``), and the gold wrapped in
a sentence with ``\\boxed{}`` (``mode="full"``). Field mapping as in ../shared/data/README.md.
Skips when the data folder is absent (e.g. on a user's machine).
"""

import json

import pytest
from _data import DATA as SHARED_DATA
from dapo_bench.verifiers.math import MathVerifier, extract_gold_from_solution

DATA = SHARED_DATA / "math"

# (file, line index) -> reason. Golds that cannot equal themselves once boxed. None today:
# prose golds (College Math proofs, "No solution") compare as normalised text.
EXCEPTIONS: dict[tuple[str, int], str] = {}


def _gold(name: str, row: dict):
    if name.startswith("gsm8k"):  # gsm8k, gsm8k_train: the gold after ####
        return extract_gold_from_solution(row["answer"])
    if name == "minerva_math":
        return extract_gold_from_solution(row["solution"])
    field = {"math500": "expected_answer", "olympiadbench": "final_answer"}.get(name, "answer")
    return row[field]


def _as_text(gold) -> str:
    if isinstance(gold, list):
        gold = gold[0]
    if isinstance(gold, float) and gold.is_integer():
        gold = int(gold)
    s = str(gold).strip()
    if s.startswith("$") and s.endswith("$") and s.count("$") == 2:
        s = s[1:-1]
    return s


def _golds():
    for path in sorted(DATA.glob("*.jsonl")):
        with path.open() as f:
            for i, line in enumerate(f):
                yield path.stem, i, _gold(path.stem, json.loads(line))


@pytest.mark.skipif(not DATA.is_dir(), reason=f"{DATA} absent (shared benchmark data)")
def test_every_gold_equals_itself_bare_and_boxed():
    items = list(_golds())
    assert len(items) > 5000
    golds = [g for *_, g in items]
    with MathVerifier(mode="answer", timeout=10.0) as bare, \
            MathVerifier(mode="full", timeout=10.0) as full:
        r_bare = bare.verify_batch([_as_text(g) for g in golds], golds)
        boxed = [f"Putting it together, the final answer is $\\boxed{{{_as_text(g)}}}$."
                 for g in golds]
        r_boxed = full.verify_batch(boxed, golds)
    failures = {(name, i): (a.reason, b.reason)
                for (name, i, _), a, b in zip(items, r_bare, r_boxed)
                if not (a.passed and b.passed) and (name, i) not in EXCEPTIONS}
    assert failures == {}
