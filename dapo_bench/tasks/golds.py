"""Gold preprocessing: turn a row's gold field into what the task's verifier compares against.

One registry (``GOLD_TRANSFORMS``), a function ``(value, row) -> gold`` per entry, named by a
spec's ``gold_transform``. Math golds become answer strings; code golds become the test objects
the code verifier takes (TACO ``{inputs, outputs, fn_name?}``, HumanEval ``{test,
entry_point}``, MBPP ``{test_list, test_imports}``, LeetCode ``{functional}``, LiveCodeBench
test-case lists). A gold that cannot be made raises UserError naming the task field.

Not covered: checking that the gold is *correct* (the verifier tests do that on real data).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from dapo_bench.errors import UserError
from dapo_bench.registry import Registry
from dapo_bench.tasks.sources import parse_maybe_literal

GoldFn = Callable[[Any, dict], Any]
GOLD_TRANSFORMS: Registry[GoldFn] = Registry("gold transform")


@GOLD_TRANSFORMS.register("identity", help="the field as it is")
def identity(value: Any, row: dict) -> Any:
    return value


@GOLD_TRANSFORMS.register("gsm8k", help="the text after '####' of a GSM8K solution, commas dropped")
def gsm8k(value: Any, row: dict) -> str:
    text = str(value)
    if "####" not in text:
        raise ValueError("no '####' in the solution")
    return text.rsplit("####", 1)[1].strip().replace(",", "")


@GOLD_TRANSFORMS.register("gsm8k_solution",
                          help="a GSM8K worked solution as a model should write it: calculator "
                               "annotations <<...>> dropped, '#### N' -> 'The answer is \\boxed{N}.'")
def gsm8k_solution(value: Any, row: dict) -> str:
    text = re.sub(r"<<[^>]*>>", "", str(value))
    if "####" not in text:
        raise ValueError("no '####' in the solution")
    body, answer = text.rsplit("####", 1)
    return f"{body.rstrip()}\nThe answer is \\boxed{{{answer.strip().replace(',', '')}}}."


@GOLD_TRANSFORMS.register("last_boxed", help="the last \\boxed{} of a worked solution (Minerva)")
def last_boxed(value: Any, row: dict) -> str:
    from dapo_bench.verifiers.math import extract_gold_from_solution

    gold = extract_gold_from_solution(str(value))
    if gold is None:
        raise ValueError("no \\boxed{} in the solution")
    return gold


@GOLD_TRANSFORMS.register("answer_list", help="a list of final answers joined by ', ' (Olympiad)")
def answer_list(value: Any, row: dict) -> str:
    value = parse_maybe_literal(value)
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError("empty answer list")
        return ", ".join(str(v).strip() for v in value)
    return str(value).strip()


@GOLD_TRANSFORMS.register("number", help="a number; integral floats like 27.0 become '27' (AMC)")
def number(value: Any, row: dict) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        f = float(value)
        return str(int(f)) if f.is_integer() else repr(f)
    s = str(value).strip()
    return re.sub(r"^(-?\d+)\.0+$", r"\1", s)


@GOLD_TRANSFORMS.register("humaneval", help="HumanEval tests: {test, entry_point, prompt?}")
def humaneval(value: Any, row: dict) -> dict:
    if "entry_point" not in row:
        raise ValueError("field 'entry_point' missing")
    gold = {"test": str(value), "entry_point": row["entry_point"]}
    if isinstance(row.get("prompt"), str):  # the checker takes the test's helpers (poly) from it
        gold["prompt"] = row["prompt"]
    return gold


@GOLD_TRANSFORMS.register("mbpp", help="MBPP tests: {test_list, test_imports}")
def mbpp(value: Any, row: dict) -> dict:
    tests = parse_maybe_literal(value)
    imports = parse_maybe_literal(row.get("test_imports") or [])
    if not isinstance(tests, list) or not tests:
        raise ValueError("test_list must be a non-empty list")
    return {"test_list": list(tests), "test_imports": list(imports or [])}


@GOLD_TRANSFORMS.register("tests", help="a tests object as stored (JSON/literal strings parsed)")
def tests(value: Any, row: dict) -> Any:
    value = parse_maybe_literal(value)
    if not isinstance(value, (dict, list)) or not value:
        raise ValueError("tests must be a non-empty object or list")
    return value


@GOLD_TRANSFORMS.register("taco", help="TACO/APPS input_output JSON: {inputs, outputs, fn_name?}")
def taco(value: Any, row: dict) -> dict:
    value = parse_maybe_literal(value)
    if not isinstance(value, dict) or "inputs" not in value or "outputs" not in value:
        raise ValueError("input_output must hold 'inputs' and 'outputs'")
    return value


@GOLD_TRANSFORMS.register("livecodebench", help="LiveCodeBench public+private test cases")
def livecodebench(value: Any, row: dict) -> dict:
    """The LiveCodeBench row subset the code verifier reads: public and private test cases
    (it decodes base64/zlib/pickle private tests) and ``metadata.func_name`` for functional
    problems."""
    meta = parse_maybe_literal(row.get("metadata") or {})
    return {
        "public_test_cases": parse_maybe_literal(value),
        "private_test_cases": row.get("private_test_cases") or [],
        "metadata": meta if isinstance(meta, dict) else {},
    }


def make_gold(name: str, value: Any, row: dict, where: str) -> Any:
    fn = GOLD_TRANSFORMS.get(name)
    try:
        return fn(value, row)
    except (ValueError, TypeError, KeyError) as e:
        raise UserError(f"{where}: gold ({name}): {e}") from None
