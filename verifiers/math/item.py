"""One item's verification: its gold's forms, the fast path within the item's deadline (the
answer found, cleaned, parsed, compared without sympy), and the sympy part in a worker with
the time the reading left. The batching, the public functions and :class:`MathVerifier` are
in :mod:`verifier`; the reasons and rules are in its docstring.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dapo_bench.verifiers.base import Verdict, short
from dapo_bench.verifiers.math.check import fast_compare, incomplete, prepare
from dapo_bench.verifiers.math.clock import OutOfTime, limit
from dapo_bench.verifiers.math.extract import (
    MAX_TEXT,
    find_answer,
    gold_answer,
    last_boxed,
    last_boxes,
)
from dapo_bench.verifiers.math.match import Trace
from dapo_bench.verifiers.math.normalize import MAX_ANSWER, TooLarge
from dapo_bench.verifiers.math.numeric import compare
from dapo_bench.verifiers.math.pool import Timeout, WorkerDied, WorkerError, WorkerPool
from dapo_bench.verifiers.math.structure import Node

from dapo_bench.errors import UserError

MARKED = ("box", "heading", "####", "phrase")  # all a response cut off at the cap is credited for


def gold_forms(gold: Any, where: str = "gold answer") -> list[str]:
    """The acceptable forms of *gold* (see the module docstring). A gold that is no gold is a
    UserError naming *where*: missing (None), empty or blank, ``nan``, a number that is not
    finite (JSON's ``NaN``, ``1e999``), an empty list, a type other than those above: graded, it
    would fail every answer, a zero no policy could earn."""
    if isinstance(gold, (list, tuple)):
        if not gold:
            raise UserError(f"{where} is an empty list")
        return [f for k, g in enumerate(gold) for f in gold_forms(g, f"{where}[{k}]")]
    if gold is None:
        raise UserError(f"{where} is missing (null)")
    if isinstance(gold, bool) or not isinstance(gold, (int, float, str)):
        raise UserError(f"{where} must be a string, a number or a list of them, got "
                        f"{type(gold).__name__} {short(gold)}")
    if isinstance(gold, int):
        return [str(gold)]
    if isinstance(gold, float):
        if not math.isfinite(gold):
            raise UserError(f"{where} is not a finite number ({gold!r})")
        return [str(int(gold)) if gold.is_integer() else repr(gold)]
    if not gold.strip():
        raise UserError(f"{where} is empty")
    if gold.strip().lower() == "nan":
        raise UserError(f"{where} is {gold.strip()!r}: a missing value, not an answer")
    return [gold]


@dataclass
class Pending:
    """A pair the fast path could not settle: the answer, the golds left, time spent so far."""

    ans: str
    golds: list[str]
    spent: float
    how: str


def verdict(passed: bool, reason: str, ans: str | None, seconds: float, how: str,
             rule: str) -> Verdict:
    return Verdict(passed, reason, ans, seconds, {"answer_from": how, "rule": rule})


def fast(prediction: Any, gold: Any, mode: str, fallback: bool,
          finished: bool = True, timeout: float = 5.0) -> Verdict | Pending:
    """Extraction, size limits and the sympy-free comparison, in the calling thread, within
    *timeout* seconds (:mod:`clock`): past it, a ``timeout`` verdict."""
    t0 = time.perf_counter()
    forms = gold_forms(gold)
    text = prediction if isinstance(prediction, str) else ("" if prediction is None
                                                           else str(prediction))
    if len(text) > MAX_TEXT:
        return verdict(False, "too_large", None, time.perf_counter() - t0, "answer", "too_large")
    found_by: list = ["answer"]  # how the answer was found, once it is
    try:
        with limit(t0 + timeout):
            return _read(text, forms, mode, fallback, finished, t0, found_by)
    except OutOfTime:
        return verdict(False, "timeout", None, time.perf_counter() - t0, found_by[0],
                        "deadline passed while reading")


def _read(text: str, forms: list[str], mode: str, fallback: bool, finished: bool, t0: float,
          found_by: list) -> Verdict | Pending:
    how = "answer"

    def done(passed: bool, reason: str, ans: str | None = None, rule: str = "") -> Verdict:
        return verdict(passed, reason, ans, time.perf_counter() - t0, how, rule or reason)

    if mode == "full":
        ans, how = find_answer(text, fallback_last_number=fallback)
        found_by[0] = how
        if not finished and how not in MARKED:
            return done(False, "truncated")
    else:
        ans = last_boxed(text) or text.strip()
    if not ans:
        return done(False, "no_answer")
    if len(ans) > MAX_ANSWER:
        return done(False, "too_large", ans[:200])
    try:
        pred = prepare(ans)
        golds = [(g, prepare(g)) for g in (gold_answer(f) for f in forms)]
    except TooLarge:
        return done(False, "too_large", ans)
    pending, trace = [], Trace()
    for g, node in golds:
        r = fast_compare(node, pred, trace)
        if r is None:
            r = _numeric(node, pred, trace)
        if r:
            return done(True, "ok", ans, trace.rule)
        if r is None:
            pending.append(g)
    if not pending and how == "box":  # the parts of the answer boxed apart
        parts = _boxed_parts(text, pred, golds)
        if parts is not None:
            return done(True, "ok", parts[0], "boxes together: " + parts[1])
    if not pending:
        return done(False, "wrong_answer", ans, trace.rule)
    if incomplete(ans):  # no reading of "1/" is a value: sympy could not parse it either
        return done(False, "parse_error", ans, "incomplete answer")
    return Pending(ans, pending, time.perf_counter() - t0, how)


def _value(n: Node) -> str | None:
    """The single value a tree compares as against a value (its label or its named
    quantity dropped, as :func:`match.compare` drops them)."""
    if n.kind == "eq" or (n.kind == "eqn" and n.var in ("chain", "named")):
        n = n.items[-1]
    return n.text if n.kind == "leaf" else None


def _numeric(gold: Node, pred: Node, trace: Trace) -> bool | None:
    """A value against a value compared in floating point (:mod:`numeric`), so no sympy, or
    None; an equation against an equation is compared as equations (by sympy)."""
    if gold.kind != "leaf" and pred.kind != "leaf":
        return None
    g, p = _value(gold), _value(pred)
    r = None if g is None or p is None else compare(g, p)
    if r is not None:
        trace.note("numeric: equal at every point" if r else "numeric: differ at a point")
    return r


def _boxed_parts(text: str, pred: Node, golds: list) -> tuple[str, str] | None:
    """A gold list of k values against a response whose last box holds fewer: its last k
    boxes together (``the maximum is \\boxed{2}`` ... ``the minimum is \\boxed{1}`` for
    ``1, 2``), decided by the fast path; (answer, rule) when they match."""
    have = len(pred.items) if pred.kind == "list" else 1
    for _, node in golds:
        if node.kind != "list" or len(node.items) <= have:
            continue
        ans = last_boxes(text, len(node.items))
        if ans is None:
            continue
        trace = Trace()
        try:
            if fast_compare(node, prepare(ans), trace):
                return ans, trace.rule
        except TooLarge:
            return None
    return None


def slow(p: Pending, timeout: float, pool: WorkerPool) -> Verdict:
    """The sympy comparison in a worker, within what the item's fast path left of its
    *timeout*; that time starts here (so a batch item does not pay for the queue in front of
    it, only for its own reading)."""
    t0 = time.perf_counter()
    reason, deadline, rule = "wrong_answer", t0 + timeout - p.spent, ""
    for g in p.golds:
        try:
            ok, why_not, rule = pool.run("compare", (g, p.ans),
                                         max(0.0, deadline - time.perf_counter()))
        except Timeout:
            reason, rule = "timeout", "timeout"
            break
        except WorkerDied:  # the machinery, not the answer: never a plain wrong answer
            reason, rule = "verifier_error", "worker died"
            continue
        except WorkerError:
            reason = "parse_error" if reason == "wrong_answer" else reason
            rule = "worker error"
            continue
        if ok:
            return verdict(True, "ok", p.ans, p.spent + time.perf_counter() - t0, p.how, rule)
        if why_not and reason == "wrong_answer":
            reason = why_not
    return verdict(False, reason, p.ans, p.spent + time.perf_counter() - t0, p.how, rule)


def fast_many(predictions: Sequence, golds: Sequence, mode: str, fallback: bool,
              finished: Sequence[bool], timeout: float = 5.0) -> list[Verdict | Pending]:
    """The fast path of many pairs, each within *timeout* (also a worker's ``fast`` op)."""
    return [fast(p, g, mode, fallback, bool(f), timeout)
            for p, g, f in zip(predictions, golds, finished)]
