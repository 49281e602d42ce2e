"""Code verifier, pure parts: test-form detection, LCB private decoding, output comparison,
plain-value equality, code extraction. No sandbox needed."""

from __future__ import annotations

import base64
import json
import pickle
import zlib

import pytest
from dapo_bench.verifiers.code import Limits, decode_lcb_private, extract_code, parse_tests
from dapo_bench.verifiers.code.compare import stdout_matches, value_matches
from dapo_bench.verifiers.code.harness import NotPlain, plain, safe_eq, to_json

from dapo_bench.errors import UserError


def test_taco_stdio_and_call():
    s = parse_tests({"inputs": ["1 2\n", ["3", "4"]], "outputs": ["3\n", ["7"]]})
    assert (s.kind, s.form, s.cases, s.expected) == ("stdio", "code_contests",
                                                     ["1 2\n", "3\n4"], ["3\n", "7"])
    s = parse_tests({"inputs": [[1, 2], [(3, 4)]], "outputs": [3, [7]], "fn_name": "f"})
    assert (s.kind, s.fn_name, s.cases, s.expected) == ("call", "f", ["[1, 2]", "[[3, 4]]"],
                                                        [3, [7]])
    s = parse_tests({"input_output": json.dumps({"inputs": ["x"], "outputs": ["y"]})})
    assert s.kind == "stdio" and s.n_tests == 1


def test_string_forms_as_in_the_shared_files():
    # leetcode.json and code_contests.json hold Python-literal strings
    s = parse_tests("{'functional': 'def check(candidate):\\n    pass\\n'}")
    assert (s.kind, s.form, s.preamble) == ("assert", "leetcode", True)
    s = parse_tests("[{'input': '1\\n', 'output': '2'}]")
    assert (s.kind, s.form) == ("stdio", "codeforces")


def test_humaneval_and_mbpp():
    s = parse_tests({"test": "def check(c): assert c(1) == 2", "entry_point": "inc"})
    assert (s.kind, s.checks) == ("assert", ["check(inc)"])
    s = parse_tests({"test_list": ["assert f(1) == 2", "assert f(2) == 3"],
                     "test_imports": ["import math"]})
    assert (s.form, s.n_tests, s.setup) == ("mbpp", 2, "import math")
    job = s.job("def f(x): return x + 1", Limits().to_dict(), "tok")
    assert job["checks"] == s.checks and "expected" not in job


def test_lcb_cases_and_private_decoding():
    cases = [{"input": "[1, 2]\n3", "output": "6", "testtype": "functional"}]
    blob = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()
    assert decode_lcb_private(blob) == cases
    s = parse_tests({"public_test_cases": json.dumps(cases), "private_test_cases": blob,
                     "metadata": json.dumps({"func_name": "f"})})
    assert (s.kind, s.fn_name, s.cases, s.expected) == ("call", "f", ["[[1, 2], 3]"] * 2, [6, 6])
    s = parse_tests([{"input": "1\n", "output": "1\n", "testtype": "stdin"}])
    assert (s.kind, s.form) == ("stdio", "livecodebench")


def test_lcb_private_refuses_objects():
    evil = base64.b64encode(zlib.compress(pickle.dumps(UserError("x")))).decode()
    with pytest.raises(UserError, match="private_test_cases"):
        decode_lcb_private(evil)


@pytest.mark.parametrize("bad, msg", [
    ({"foo": 1}, "unrecognised test form"),
    ([], "empty"),
    ({"inputs": ["1"], "outputs": []}, "1 inputs but 0 outputs"),
    ("not json {", "neither JSON nor a Python literal"),
    ([{"input": "1"}], r"tests\[0\]"),
    ({"test_list": []}, "empty"),
])
def test_malformed_tests(bad, msg):
    with pytest.raises(UserError, match=msg):
        parse_tests(bad)


def test_stdout_rules():
    assert stdout_matches(b"1.50 2\nabc  \n\n", "1.5 2\nabc")
    assert stdout_matches(b"3\r\n", "3\n")
    assert not stdout_matches(b"2\n1\n", "1\n2\n")  # reordered
    assert not stdout_matches(b"1\n1\n2\n", "1\n2\n")  # duplicated
    assert not stdout_matches(b"1.5000001\n", "1.5\n")
    assert stdout_matches(b"1.5000001\n", "1.5\n", float_tol=1e-6)
    assert not stdout_matches(b"\xff\xfe\n", "1\n")  # binary garbage
    assert not stdout_matches(b"0x10\n", "16\n")
    assert not stdout_matches(b"", "0\n")


def test_value_rules():
    assert value_matches("[1, 2]", [1, 2])
    assert value_matches("7", [7])  # TACO wraps expected outputs in a list
    assert not value_matches("[2, 1]", [1, 2])
    assert not value_matches(None, 1)
    assert value_matches("0.30000000000000004", 0.3, float_tol=1e-9)
    assert not value_matches("0.30000000000000004", 0.3)


class _AlwaysEqual:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


class _SneakyInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


def test_plain_values_defeat_overridden_eq():
    assert not safe_eq(_AlwaysEqual(), 5)
    assert not safe_eq([_AlwaysEqual()], [5])
    assert not safe_eq(_SneakyInt(7), 5) and safe_eq(_SneakyInt(5), 5)
    assert safe_eq((1, [2.0, {"a": True}]), (1, [2, {"a": 1}]))  # Python's own == otherwise
    assert not safe_eq((1, 2), [1, 2])
    a, b = _AlwaysEqual(), _AlwaysEqual()
    assert safe_eq(a, b)  # two objects of the test's own classes: their == decides
    with pytest.raises(NotPlain):
        plain(_AlwaysEqual())
    assert to_json((1, {2}, "x")) == '[1, [2], "x"]'


def test_extract_code():
    text = "a\n```python\nprint(1)\n```\nthen\n```py\nprint(2)\n```\n```\nplain\n```\n"
    assert extract_code(text) == "print(2)"
    assert extract_code("```\nprint(3)\n```") == "print(3)"
    assert extract_code("  print(4)\n") == "print(4)"
