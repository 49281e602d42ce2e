"""Code verifier, pure parts: test-form detection, LCB private decoding, output comparison,
plain values (what crosses between program and checker), what the checker proxies and what a
proxy cannot express, code extraction. No sandbox needed."""

from __future__ import annotations

import base64
import json
import pickle
import zlib

import pytest
from dapo_bench.verifiers.code import Limits, decode_lcb_private, extract_code, parse_tests
from dapo_bench.verifiers.code.compare import stdout_matches, value_matches
from dapo_bench.verifiers.code.values import BadValue, NotPlain, pack, plain, to_json, unpack

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
    with pytest.raises(NotPlain):
        pack(_AlwaysEqual())
    with pytest.raises(NotPlain):
        pack([1, {"a": _AlwaysEqual()}])
    assert type(plain(_SneakyInt(7))) is int and plain(_SneakyInt(7)) != 5
    v = (1, [2.0, {"a": True, (3, 4): {5}}], frozenset({b"x"}), 1 + 2j, None)
    assert plain(v) == v and type(plain(v)[2]) is frozenset
    assert to_json((1, {2}, "x")) == '[1, [2], "x"]'
    assert pack([1, lambda: 0], ref=lambda x: 7) == [1, {"r": 7}]  # handles only when asked


@pytest.mark.parametrize("bad", [{"z": 1}, {"t": 1}, {"t": [], "s": []}, {"s": [[1]]},
                                 {"d": [[1]]}, {"d": [[[1], 2]]}, {"r": 0}, {"c": ["a", 1]},
                                 {"b": "\u2603"}])
def test_unpack_accepts_only_packed_plain_data(bad):
    with pytest.raises(BadValue):
        unpack(bad)


def test_unpack_depth_is_bounded():
    deep = 0
    for _ in range(150):
        deep = [deep]
    with pytest.raises(BadValue):
        unpack(deep)
    with pytest.raises(NotPlain):
        pack(deep)


def test_assert_targets_and_what_a_proxy_cannot_express():
    lc = parse_tests({"functional": "def check(candidate):\n    assert candidate(a=[1]) == 1\n"
                                    "\ncheck(Solution().f)"})
    assert (lc.targets, lc.unsupported, lc.mutation) == (["Solution"], "", False)
    he = parse_tests({"test": "def check(candidate):\n    assert poly([1], candidate(1)) == 0\n",
                      "entry_point": "f"})
    assert he.targets == ["f", "poly"]  # without the prompt, the program's poly is used
    he = parse_tests({"test": "def check(candidate):\n    assert poly([1], candidate(1)) == 0\n",
                      "entry_point": "f", "prompt": "def poly(xs, x):\n    return 0\n"})
    assert he.targets == ["f"]
    assert parse_tests({"test_list": ["assert sum(1, 2) == 3"]}).targets == ["sum"]
    assert parse_tests({"test_list": ["assert set(f(1)) == {1}"]}).targets == ["f"]
    cases = {"assert f(lambda x: x, 1) == 1": "callable_arg", "assert f([1], key=len)": "callable_arg",
             "def g(x):\n    return x\nassert f(g) == 1": "callable_arg",
             "x = [1]\nassert f(x) is x": "identity", "assert f(list(range(3))) is None": "",
             "assert f(len([1])) == 1": ""}
    for src, why in cases.items():
        assert parse_tests({"test_list": [src]}).unsupported == why, src
    assert parse_tests({"test_list": ["x = [3, 1]\nf(x)\nassert x == [1, 3]"]}).mutation
    assert parse_tests({"test_list": ["f(1)"]}).unsupported == "no_assert"


def test_extract_code():
    text = "a\n```python\nprint(1)\n```\nthen\n```py\nprint(2)\n```\n```\nplain\n```\n"
    assert extract_code(text) == "print(2)"
    assert extract_code("```\nprint(3)\n```") == "print(3)"
    assert extract_code("  print(4)\n") == "print(4)"
