"""Output comparison, in the parent (the sandbox never sees expected outputs).

stdout: line by line after stripping trailing white space (and trailing blank lines); within a
line, tokens split on white space must be equal, where two numeric tokens are equal when they
are the same number (``1.50`` = ``1.5``, exactly, via Decimal); with ``float_tol`` numbers within
that absolute or relative tolerance match. Reordered, missing or duplicated lines never match.
Output that is not valid UTF-8 never matches.

call results: JSON data equality (tuples were made lists in the child); as in TACO, an
expected value wrapped in a one-element list also matches the bare result.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

_NUM = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _lines(text: str) -> list[str]:
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _num_eq(a: str, b: str, tol: float | None) -> bool:
    if not (_NUM.fullmatch(a) and _NUM.fullmatch(b)):
        return False
    try:
        da, db = Decimal(a), Decimal(b)
    except InvalidOperation:
        return False
    if da == db:
        return True
    if tol is None:
        return False
    diff = abs(da - db)
    return diff <= Decimal(str(tol)) or diff <= Decimal(str(tol)) * max(abs(da), abs(db))


def stdout_matches(got: bytes, expected: str, float_tol: float | None = None) -> bool:
    try:
        text = got.decode("utf-8")
    except UnicodeDecodeError:
        return False
    gl, el = _lines(text), _lines(expected)
    if len(gl) != len(el):
        return False
    for a, b in zip(gl, el):
        if a == b:
            continue
        ta, tb = a.split(), b.split()
        if len(ta) != len(tb):
            return False
        for x, y in zip(ta, tb):
            if x != y and not _num_eq(x, y, float_tol):
                return False
    return True


def _close(a: Any, b: Any, tol: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], tol) for k in a)
    return a == b


def value_matches(got_json: str | None, expected: Any, float_tol: float | None = None) -> bool:
    if got_json is None:
        return False
    try:
        got = json.loads(got_json)
    except (json.JSONDecodeError, TypeError):
        return False
    cands = [expected]
    if isinstance(expected, list) and len(expected) == 1:
        cands.append(expected[0])
    for exp in cands:
        if got == exp:
            return True
        if float_tol is not None and _close(got, exp, float_tol):
            return True
    return False
