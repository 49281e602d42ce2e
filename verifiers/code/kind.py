"""What the code verifier says about its kind (see ``verifiers.base``): how a completion becomes
the program it runs (:func:`program_from`), what a gold is (:func:`check_tests`: tests of a
form ``formats`` reads, whose test code compiles) and a gold no program can pass
(:func:`impossible_tests`, for canaries).

A program is the last fenced python block of the completion's text (``extract_code``), or the
whole text without a fence. A HumanEval-style completion may hold only the function's body:
when the tests name an ``entry_point`` and a prefix is known (the code the model was asked to
complete: the caller's, else the tests' own ``prompt``), a program that does not define the
entry point is the prefix followed by the body (its indentation kept, fenced or not: a raw
HumanEval completion starts with an indented line); one that does gets the prefix's import
lines.

Not here: running programs (``api``), parsing test forms (``formats``).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from dapo_bench.verifiers.code.formats import parse_tests

from dapo_bench.errors import UserError

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)
_IMPORT = re.compile(r"(import|from)\s")


def _last_block(text: str) -> str | None:
    """The last fenced python block (```python, ```py, or an unlabelled fence when no python
    one exists), blank lines around it trimmed; None without a fence."""
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(text)]
    py = [b for lang, b in blocks if lang in ("python", "py", "python3")]
    bare = [b for lang, b in blocks if not lang]
    if py or bare:
        return (py or bare)[-1].strip("\n")
    return None


def extract_code(text: str) -> str:
    """The last fenced python block of a model response (```python, ```py, or an unlabelled
    fence when no python one exists); the whole text, stripped, when there is no fence."""
    block = _last_block(text)
    return text.strip() if block is None else block


def _entry_and_prompt(tests: Any) -> tuple[str | None, str | None]:
    """HumanEval tests' ``entry_point`` and ``prompt`` (None where absent), decoding a string
    that holds them; anything else gives (None, None) (``check_gold`` judges the tests)."""
    if isinstance(tests, str) and "entry_point" in tests:
        for decode in (json.loads, ast.literal_eval):
            try:
                tests = decode(tests)
                break
            except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                continue
    if not isinstance(tests, dict) or not isinstance(tests.get("entry_point"), str):
        return None, None
    prompt = tests.get("prompt")
    return tests["entry_point"], prompt if isinstance(prompt, str) else None


def program_from(text: str, tests: Any = None, prefix: str | None = None) -> str:
    """The program of a completion's *text* for *tests* (module docstring)."""
    program = extract_code(text)
    entry, prompt = _entry_and_prompt(tests)
    prefix = prompt if prefix is None else prefix
    if entry is None or prefix is None:
        return program
    if not re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", program, re.MULTILINE):
        block = _last_block(text)  # the body only: its indentation kept, fenced or not
        return prefix + (text.strip("\n").rstrip() + "\n" if block is None else block)
    imports = [ln for ln in prefix.splitlines() if _IMPORT.match(ln)]
    return "\n".join(imports + [program])


def check_tests(tests: Any, where: str = "tests") -> None:
    """UserError naming *where* for tests that are none: missing, of no form ``formats``
    reads, or, for assert-based tests, test code (checks, setup, a HumanEval prompt) that does
    not compile (the checker would fail every program with ``bad_test``: a 0 for all)."""
    if tests is None:
        raise UserError(f"{where} is missing (null)")
    spec = parse_tests(tests, where)
    if spec.kind != "assert":
        return
    for name, src in (("prompt", spec.prompt), ("setup", spec.setup),
                      *(("check", c) for c in spec.checks)):
        try:
            compile(src or "", f"<{name}>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
            raise UserError(f"{where}: the test code ({name}) does not compile: "
                            f"{type(e).__name__}: {getattr(e, 'msg', None) or e}") from None


def _other(value: Any) -> Any:
    """A value that differs from ``value`` under any output comparison."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1000003
    if isinstance(value, str):
        return value.rstrip() + " canary"
    return {"canary": value}


def impossible_tests(tests: Any) -> dict:
    """Tests that contradict each other, built from a code problem's ``tests``
    (ImpossibleBench's "conflicting" kind): stdin/stdout and call-based tests run the first case
    twice with two different expected outputs; MBPP asserts the first check and its negation;
    HumanEval's ``check`` must both pass and fail on the same candidate. A deterministic program
    passes at most one half."""
    spec = parse_tests(tests)
    if spec.kind == "stdio":
        inp, out = spec.cases[0], spec.expected[0]
        return {"inputs": [inp, inp], "outputs": [out, _other(out)]}
    if spec.kind == "call":
        args = json.loads(spec.cases[0])
        out = spec.expected[0]
        return {"inputs": [args, args], "outputs": [out, _other(out)], "fn_name": spec.fn_name}
    if spec.form == "mbpp":
        first = spec.checks[0].strip()
        if first.startswith("assert "):
            return {"test_list": [first, f"assert not ({first[len('assert '):]})"],
                    "test_setup_code": spec.setup or ""}
    if spec.form == "humaneval":
        gold = dict(tests) if isinstance(tests, dict) else json.loads(tests)
        gold["test"] = (f"{spec.setup}\n\n_canary_check = check\n\n\ndef check(candidate):\n"
                        f"    _canary_check(candidate)  # the tests pass ...\n    try:\n"
                        f"        _canary_check(candidate)\n    except AssertionError:\n"
                        f"        return  # ... and fail, on the same candidate\n"
                        f"    raise AssertionError('canary: the tests passed twice')\n")
        return gold
    raise UserError(f"--canaries: no code canary for tests of form {spec.form}")
