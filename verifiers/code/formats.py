"""Test formats: detect the form of a ``tests`` value and split it into what the sandbox runs
(inputs, checks) and what only the parent keeps (expected outputs).

Forms (auto-detected; a JSON or Python-literal string of any of them is decoded first):

* TACO / APPS ``{"inputs": [...], "outputs": [...], "fn_name"?}`` (also ``{"input_output": s}``)
  and code_contests ``{"inputs", "outputs"}``: stdin/stdout, or call-based with ``fn_name``.
* codeforces ``[{"input", "output"}, ...]``: stdin/stdout.
* LiveCodeBench test-case lists ``[{"input", "output", "testtype"}, ...]`` (``functional``
  cases: one JSON argument a line), or an LCB row subset ``{"public_test_cases",
  "private_test_cases"?, "metadata"?: {"func_name"}}`` whose private cases may be
  base64 -> zlib -> pickle -> JSON (`decode_lcb_private`).
* HumanEval ``{"test", "entry_point", "prompt"?}`` (the program is prompt + completion; with
  ``prompt``, helpers the test calls, such as HumanEval/32's ``poly``, are the prompt's own).
* MBPP ``{"test_list", "test_imports"?, "test_setup_code"?}``: one check per assert.
* LeetCode ``{"functional": "def check(candidate): ... check(Solution().f)"}``, run after the
  usual LeetCode imports (typing, collections, math, ...).

Malformed tests raise `dapo_bench.errors.UserError` naming the field.
"""

from __future__ import annotations

import ast
import base64
import io
import json
import pickle
import zlib
from dataclasses import dataclass, field
from typing import Any

from dapo_bench.verifiers.code import scan

from dapo_bench.errors import UserError


@dataclass
class Spec:
    kind: str  # "stdio" | "call" | "assert"
    form: str
    cases: list[str] = field(default_factory=list)  # stdin texts, or JSON argument lists
    expected: list[Any] = field(default_factory=list)  # parent-side only
    fn_name: str | None = None
    setup: str | None = None
    checks: list[str] = field(default_factory=list)
    preamble: bool = False
    prompt: str | None = None  # HumanEval: run in the checker, so its helpers are the dataset's
    targets: list[str] = field(default_factory=list)  # names the checker proxies (`scan`)
    unsupported: str = ""  # why a proxy cannot run these checks (`scan.proxy_limits`)
    mutation: bool = False  # the checks read an argument after the call (write-back rule)

    @property
    def n_tests(self) -> int:
        return len(self.checks) if self.kind == "assert" else len(self.cases)

    def job(self, program: str, limits: dict, token: str) -> dict:
        """What a worker receives: no expected outputs. (For assert-based tests the test code
        goes only to the checker process; the program process never holds it.)"""
        j = {"kind": self.kind, "program": program, "limits": limits, "preamble": self.preamble}
        if self.kind == "assert":
            j.update(setup=self.setup, checks=self.checks, token=token, targets=self.targets,
                     prompt=self.prompt)
        else:
            j.update(cases=self.cases, fn_name=self.fn_name)
        return j


def _assert_spec(form: str, checks: list[str], setup: str | None = None,
                 entry_point: str | None = None, prompt: str | None = None,
                 preamble: bool = False) -> Spec:
    """An assert-based Spec with its proxy targets and what a proxy cannot express."""
    sources = [setup, *checks]
    names = scan.targets(sources, entry_point, prompt, preamble)
    found = scan.proxy_limits(sources, names)
    why = [k for k in ("callable_arg", "identity") if found[k]]
    if not scan.checks_anything(sources):
        why.append("no_assert")
    return Spec("assert", form, setup=setup, checks=checks, preamble=preamble, prompt=prompt,
                targets=names, unsupported=", ".join(why), mutation=found["mutation"])


class _NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def decode_lcb_private(s: str) -> list:
    """LiveCodeBench private test cases: plain JSON, or base64 -> zlib -> pickle -> JSON.
    The pickle may only hold plain data (no classes are loaded)."""
    try:
        return json.loads(s)
    except (json.JSONDecodeError, TypeError):
        pass
    try:
        raw = _NoGlobals(io.BytesIO(zlib.decompress(base64.b64decode(s.encode())))).load()
        return json.loads(raw) if isinstance(raw, (str, bytes)) else raw
    except Exception as e:  # noqa: BLE001 - any decoding failure is the user's data
        raise UserError(f"tests: private_test_cases: cannot decode ({e})") from None


def _decode_str(s: str, where: str) -> Any:
    try:
        return json.loads(s)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    raise UserError(f"{where}: a string that is neither JSON nor a Python literal")


def _text(x: Any) -> str:
    if isinstance(x, list):
        return "\n".join(map(str, x))
    return x if isinstance(x, str) else str(x)


def _normal(x: Any) -> Any:
    """Expected call results as JSON data (tuples -> lists)."""
    return json.loads(json.dumps(x))


def _io(inputs: list, outputs: list, fn_name: str | None, form: str, where: str) -> Spec:
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise UserError(f"{where}: 'inputs' and 'outputs' must be lists")
    if len(inputs) != len(outputs):
        raise UserError(f"{where}: {len(inputs)} inputs but {len(outputs)} outputs")
    if fn_name:
        cases = [json.dumps(a if isinstance(a, list) else [a]) for a in inputs]
        return Spec("call", form, cases, [_normal(o) for o in outputs], fn_name=fn_name,
                    preamble=True)
    return Spec("stdio", form, [_text(i) for i in inputs], [_text(o) for o in outputs])


def _case_list(items: list, fn_name: str | None, where: str) -> Spec:
    for k, it in enumerate(items):
        if not isinstance(it, dict) or "input" not in it or "output" not in it:
            raise UserError(f"{where}[{k}]: expected an object with 'input' and 'output'")
    types = {it.get("testtype", "stdin") for it in items}
    if types == {"functional"}:
        cases, expected = [], []
        for k, it in enumerate(items):
            try:
                args = [json.loads(line) for line in it["input"].split("\n") if line.strip()]
                expected.append(json.loads(it["output"]))
            except (json.JSONDecodeError, AttributeError) as e:
                raise UserError(f"{where}[{k}]: functional case is not JSON ({e})") from None
            cases.append(json.dumps(args))
        return Spec("call", "livecodebench", cases, expected, fn_name=fn_name or "",
                    preamble=True)
    if types - {"stdin"}:
        raise UserError(f"{where}: mixed or unknown testtype {sorted(types)}")
    form = "livecodebench" if any("testtype" in it for it in items) else "codeforces"
    return Spec("stdio", form, [_text(it["input"]) for it in items],
                [_text(it["output"]) for it in items])


def parse_tests(tests: Any, where: str = "tests") -> Spec:
    """Detect the form of ``tests`` (see module doc) -> Spec."""
    if isinstance(tests, bytes):
        tests = tests.decode("utf-8")
    if isinstance(tests, str):
        tests = _decode_str(tests, where)
    if isinstance(tests, list):
        if not tests:
            raise UserError(f"{where}: empty test list")
        return _case_list(tests, None, where)
    if not isinstance(tests, dict):
        raise UserError(f"{where}: expected an object or a list, got {type(tests).__name__}")
    if "input_output" in tests:
        io_ = tests["input_output"]
        io_ = _decode_str(io_, f"{where}.input_output") if isinstance(io_, str) else io_
        fn = tests.get("fn_name") or (io_.get("fn_name") if isinstance(io_, dict) else None)
        return parse_tests(dict(io_, fn_name=fn), where)
    if "public_test_cases" in tests or "private_test_cases" in tests:
        items = []
        for key in ("public_test_cases", "private_test_cases"):
            v = tests.get(key)
            if isinstance(v, str) and v:
                v = decode_lcb_private(v)
            items += list(v or [])
        meta = tests.get("metadata") or {}
        meta = json.loads(meta) if isinstance(meta, str) and meta else meta
        return _case_list(items, (meta or {}).get("func_name"), where)
    if "inputs" in tests and "outputs" in tests:
        form = "taco" if "fn_name" in tests else "code_contests"
        return _io(tests["inputs"], tests["outputs"], tests.get("fn_name"), form, where)
    if "test" in tests and "entry_point" in tests:
        entry, prompt = str(tests["entry_point"]), tests.get("prompt")
        if not entry.isidentifier():
            raise UserError(f"{where}.entry_point: {entry!r} is not a Python name")
        return _assert_spec("humaneval", [f"check({entry})"], str(tests["test"]), entry,
                            str(prompt) if prompt else None)
    if "test_list" in tests:
        lst = tests["test_list"]
        lst = _decode_str(lst, f"{where}.test_list") if isinstance(lst, str) else lst
        imports = tests.get("test_imports") or []
        imports = _decode_str(imports, f"{where}.test_imports") if isinstance(imports, str) \
            else imports
        setup = "\n".join(list(imports) + [tests.get("test_setup_code") or ""]).strip()
        if not lst:
            raise UserError(f"{where}.test_list: empty")
        return _assert_spec("mbpp", [str(t) for t in lst], setup or None)
    if "functional" in tests:
        return _assert_spec("leetcode", [str(tests["functional"])], preamble=True)
    raise UserError(f"{where}: unrecognised test form with keys {sorted(tests)[:8]} (expected "
                    "TACO inputs/outputs, HumanEval test/entry_point, MBPP test_list, LeetCode "
                    "functional, or a LiveCodeBench/codeforces case list)")
