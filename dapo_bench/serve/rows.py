"""The ``dapo-bench verify`` row format, in one place for the CLI and the HTTP server.

:func:`check_item` validates one input object (prediction and gold fields, their types, the
gold by the verifier's own ``check_gold``: a code item's tests, an empty or NaN math gold;
``finish_reason``) and raises a one-line :class:`UserError` that starts with *where*
(``FILE:LINE`` for the CLI, ``items[3]`` for the server); :func:`verdict_row` turns a
:class:`Verdict` into the output object (``index``, ``passed``, ``reason``, ``extracted``,
``seconds``, ``details``; with ``explain``, ``answer_from`` and ``rule``).

Not here: reading files, running verifiers, summaries (``commands/verify.py``, ``engine``).
"""

from __future__ import annotations

import json
from typing import Any

from dapo_bench.errors import UserError
from dapo_bench.verifiers.base import short


def check_item(where: str, cls: Any, row: dict, pf: str, gf: str) -> tuple[Any, Any, bool]:
    """``(prediction, gold, finished)`` of one input object for the verifier class *cls*, or
    UserError naming the field."""
    for f in (pf, gf):
        if f not in row:
            raise UserError(f"{where}: field {f!r} missing")
    kinds = cls.prediction_types
    if isinstance(row[pf], bool) or not isinstance(row[pf], kinds):
        want = "a string" if kinds == (str,) else "a string or a number"
        raise UserError(f"{where}: field {pf!r} must be {want}, got "
                        f"{type(row[pf]).__name__} {short(row[pf])}")
    cls.check_gold(row[gf], f"{where}: field {gf!r}")
    reason = row.get("finish_reason", "stop")
    if reason not in ("stop", "length"):
        raise UserError(f"{where}: field 'finish_reason' must be \"stop\" or "
                        f"\"length\", got {json.dumps(reason)[:40]}")
    return row[pf], row[gf], reason == "stop"


def verdict_row(i: int, vd, explain: bool) -> dict:
    """The output object of item *i*: the verdict's fields, ``details`` without the math
    verifier's ``answer_from``/``rule`` (kept at top level only with *explain*)."""
    row = {"index": i, **vd.to_dict()}
    details = dict(row.pop("details") or {})
    why = {k: details.pop(k) for k in ("answer_from", "rule") if k in details}
    if explain:
        row.update(why)
    if details:
        row["details"] = details
    return row
