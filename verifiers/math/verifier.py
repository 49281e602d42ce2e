"""The math verifier: ``verify``, ``verify_batch``, ``normalize_answer`` and ``MathVerifier``.

One check: find the answer (``mode="full"``, the default: a prediction that is itself an
answer is taken whole, a response is searched, see :mod:`extract`) or take the prediction as
the answer (``mode="answer"``; a ``\\boxed{}`` in it is still unwrapped), read the gold the same
way (:func:`extract.gold_answer`: ``$..$``, boxes, an answer phrase), clean and parse both
sides (cached), try the fast path, and send only the undecided pairs to a sympy worker with a
hard deadline. Each verdict's ``extracted`` is the answer taken from the prediction, and its
``details`` say how it was found (``answer_from``) and which rule decided (``rule``).
Reasons: ``ok``, ``wrong_answer``, ``no_answer``, ``truncated`` (below), ``timeout``,
``verifier_error`` (a sympy worker died: the machinery's failure, ``Verdict.infra_error``),
``too_large`` (response over 100,000 characters, answer over 4,000, or nesting deeper than
48), and ``parse_error`` (not equal, and sympy could not read one side).

A response cut off at the token cap (``finished=False``: the generator's finish_reason was
``length``) is only credited for an answer it *marked*: a ``\\boxed{}`` group or an answer
phrase (``The answer is``), an answer heading (``# Answer``, ``**Final Answer**``) or a ``####``
line. The weaker rules (a bare prediction, the last line, the final sentence's last span, a
bold span, the last number) read an unfinished text's last
number as its answer, and would pay a policy for rambling into the cap; such a response
fails with reason ``truncated`` and no ``extracted`` answer (so it casts no maj@k vote);
``answer_from`` still names the rule that would have applied.

Gold forms: a string (``"\\frac{1}{2}"``, ``"$(1,2)$"``, ``"\\boxed{1} papers and \\boxed{2}
bins"``), a number (AMC's ``27.0`` means 27), or a list/tuple of *alternative* acceptable
forms, any of which may match (so OlympiadBench's ``final_answer`` list can be passed as is).
A gold with several answers, all required, is ONE string with the answers separated by
commas, ``and`` or ``or`` (``"1331 and 1728"``, ``"$1$, $2$"``): the prediction must list the
same answers, in any order.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from dapo_bench.verifiers.base import VERIFIERS, Kind, Verdict, short, structured
from dapo_bench.verifiers.math.check import fast_compare, prepare
from dapo_bench.verifiers.math.extract import MAX_TEXT, find_answer, gold_answer, last_boxed
from dapo_bench.verifiers.math.match import Trace
from dapo_bench.verifiers.math.normalize import MAX_ANSWER, TooLarge, parse_number
from dapo_bench.verifiers.math.probes import ATTACKS, GOLD, decoy_gold
from dapo_bench.verifiers.math.structure import Node
from dapo_bench.verifiers.math.worker import Timeout, WorkerDied, WorkerError, WorkerPool

from dapo_bench.errors import UserError

MODES = ("full", "answer")
MARKED = ("box", "heading", "####", "phrase")  # all a response cut off at the cap is credited for
SMALL_BATCH = 32  # fewer sympy pairs than this in a batch: no threads, one worker
SPREAD_MIN = 16  # pairs a batch needs before ``fast_in_workers`` sends its fast path out
SPREAD_CHUNK = 64  # fewest pairs of a chunk sent to one worker (so a small batch is one trip)


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
class _Pending:
    """A pair the fast path could not settle: the answer, the golds left, time spent so far."""

    ans: str
    golds: list[str]
    spent: float
    how: str


def _verdict(passed: bool, reason: str, ans: str | None, seconds: float, how: str,
             rule: str) -> Verdict:
    return Verdict(passed, reason, ans, seconds, {"answer_from": how, "rule": rule})


def _fast(prediction: Any, gold: Any, mode: str, fallback: bool,
          finished: bool = True) -> Verdict | _Pending:
    """Extraction, size limits and the sympy-free comparison, in the calling thread."""
    t0 = time.perf_counter()
    forms = gold_forms(gold)
    how = "answer"

    def done(passed: bool, reason: str, ans: str | None = None, rule: str = "") -> Verdict:
        return _verdict(passed, reason, ans, time.perf_counter() - t0, how, rule or reason)

    text = prediction if isinstance(prediction, str) else ("" if prediction is None
                                                           else str(prediction))
    if len(text) > MAX_TEXT:
        return done(False, "too_large")
    if mode == "full":
        ans, how = find_answer(text, fallback_last_number=fallback)
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
        if r:
            return done(True, "ok", ans, trace.rule)
        if r is None:
            pending.append(g)
    if not pending:
        return done(False, "wrong_answer", ans, trace.rule)
    return _Pending(ans, pending, time.perf_counter() - t0, how)


def _slow(p: _Pending, timeout: float, pool: WorkerPool) -> Verdict:
    """The sympy comparison in a worker; the deadline starts here (so a batch item does not
    pay for the queue in front of it)."""
    t0 = time.perf_counter()
    reason, deadline, rule = "wrong_answer", t0 + timeout, ""
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
            return _verdict(True, "ok", p.ans, p.spent + time.perf_counter() - t0, p.how, rule)
        if why_not and reason == "wrong_answer":
            reason = why_not
    return _verdict(False, reason, p.ans, p.spent + time.perf_counter() - t0, p.how, rule)


def _check(prediction: Any, gold: Any, mode: str, fallback: bool, timeout: float,
           pool: WorkerPool, finished: bool = True) -> Verdict:
    r = _fast(prediction, gold, mode, fallback, finished)
    return r if isinstance(r, Verdict) else _slow(r, timeout, pool)


def fast_many(predictions: Sequence, golds: Sequence, mode: str, fallback: bool,
              finished: Sequence[bool]) -> list[Verdict | _Pending]:
    """The fast path of many pairs (also a worker's ``fast`` op)."""
    return [_fast(p, g, mode, fallback, bool(f)) for p, g, f in zip(predictions, golds, finished)]


def _fast_spread(predictions: Sequence, golds: Sequence, mode: str, fallback: bool,
                 finished: Sequence[bool], pool: WorkerPool, workers: int,
                 ex: ThreadPoolExecutor) -> list[Verdict | _Pending]:
    """:func:`fast_many` in up to *workers* contiguous chunks of at least
    :data:`SPREAD_CHUNK` pairs, each in a worker process (the calling process stays free, e.g.
    for a server's HTTP work; concurrent small batches take a worker each). A chunk whose
    worker died, failed or overran its generous deadline is done in this thread instead: the
    same code, the same verdicts."""
    n = len(predictions)
    size = max(-(-n // workers), SPREAD_CHUNK)

    def one(lo: int) -> list:
        hi = min(lo + size, n)
        args = (list(predictions[lo:hi]), list(golds[lo:hi]), mode, fallback,
                [bool(f) for f in finished[lo:hi]])
        try:
            return pool.run("fast", args, 1.0 + 0.01 * (hi - lo))
        except (Timeout, WorkerError):  # WorkerDied is a WorkerError
            return fast_many(*args)

    return [r for part in ex.map(one, range(0, n, size)) for r in part]


def _batch(predictions: Sequence, golds: Sequence, mode: str, fallback: bool, timeout: float,
           pool: WorkerPool, workers: int, finished: Sequence[bool] | None = None,
           spread: ThreadPoolExecutor | None = None) -> list[Verdict]:
    """Fast path for all pairs in this thread (``spread``, the threads that drive the workers:
    in the worker processes, for a batch of :data:`SPREAD_MIN` pairs or more), then the
    undecided ones over *workers* threads, each driving one worker process."""
    if len(predictions) != len(golds):
        raise UserError(f"{len(predictions)} predictions but {len(golds)} gold answers")
    if finished is None:
        finished = [True] * len(predictions)
    elif len(finished) != len(predictions):
        raise UserError(f"{len(predictions)} predictions but {len(finished)} finished flags")
    if spread is not None and len(predictions) >= SPREAD_MIN:
        out = _fast_spread(predictions, golds, mode, fallback, finished, pool, workers, spread)
    else:
        out = fast_many(predictions, golds, mode, fallback, finished)
    idx = [i for i, r in enumerate(out) if isinstance(r, _Pending)]
    if workers <= 1 or len(idx) < SMALL_BATCH:
        slow = [_slow(out[i], timeout, pool) for i in idx]
    else:
        with ThreadPoolExecutor(max_workers=workers) as ex:
            slow = list(ex.map(lambda i: _slow(out[i], timeout, pool), idx))
    for i, v in zip(idx, slow):
        out[i] = v
    return out


def _check_args(mode: str, timeout: float) -> None:
    if mode not in MODES:
        raise UserError(f"math verifier: unknown mode {mode!r} (known: {', '.join(MODES)})")
    if not timeout or timeout <= 0:
        raise UserError(f"math verifier: timeout must be > 0 seconds, got {timeout!r}")


_DEFAULT: dict[str, WorkerPool] = {}
_DEFAULT_LOCK = threading.Lock()


def _default_pool() -> WorkerPool:
    with _DEFAULT_LOCK:
        if "pool" not in _DEFAULT:
            _DEFAULT["pool"] = WorkerPool(os.cpu_count() or 1)
        return _DEFAULT["pool"]


def verify(prediction_text: str, gold: Any, *, mode: str = "full",
           fallback_last_number: bool = True, timeout: float = 5.0,
           finished: bool = True) -> Verdict:
    """Check one prediction against a gold answer; never takes much longer than *timeout*.
    ``finished=False``: the response was cut off at the token cap (module docstring).

    Uses a process-wide pool of sympy workers (one per core, started on first need); safe to
    call from several threads at once.
    """
    _check_args(mode, timeout)
    return _check(prediction_text, gold, mode, fallback_last_number, timeout, _default_pool(),
                  finished)


def verify_batch(predictions: Sequence[str], golds: Sequence[Any], *, mode: str = "full",
                 fallback_last_number: bool = True, timeout: float = 5.0,
                 workers: int | None = None,
                 finished: Sequence[bool] | None = None) -> list[Verdict]:
    """:func:`verify` over pairs, in order; sympy work spread over all cores. ``finished``: one
    flag per prediction, False for a response cut off at the token cap (default: all True)."""
    _check_args(mode, timeout)
    pool = _default_pool()
    return _batch(predictions, golds, mode, fallback_last_number, timeout, pool,
                  workers or pool.size, finished)


@VERIFIERS.register("math", help="answer extraction + exact/sympy equivalence (bounded)")
class MathVerifier(Kind):
    """Math answers: ``verify(prediction, gold) -> Verdict`` (see the module docstring).

    ``workers`` sympy worker processes (default: all cores) are started lazily and killed by
    :meth:`close` (or on exit). A batch runs the fast path in the calling thread, then spreads
    the pairs that need sympy over the workers; ``workers=1``, or fewer than 32 such pairs,
    runs them one by one. Each pair's deadline starts when its sympy check starts.
    ``fast_in_workers``: a batch of 16 pairs or more runs its fast path in the workers too
    (chunks of 64 pairs or more, in parallel), leaving the calling process free (``dapo-bench
    serve`` uses it: its own process parses and answers HTTP); the verdicts are the same.
    """

    name = "math"
    version = "3.1"  # 2.1: a cut-off response needs a marked answer; 3.0: issue 31 (docs);
    # 3.1: the final sentence comes before a closing check; a recent answer phrase beats it
    fields = ("prediction", "gold")
    # its kind (verifiers.base): a completion is its text (Kind's); a gold a string, number or
    # list of them; maj@k votes on the extracted answer; the server runs the fast path in workers
    column, prediction_types, votes = "answer", (str, int, float), True
    serve_options, worker_module = {"fast_in_workers": True}, "dapo_bench.verifiers.math.serve"

    @classmethod
    def check_gold(cls, gold: Any, where: str = "gold answer") -> None:
        gold_forms(gold, where)

    @classmethod
    def claims(cls, label: Any) -> bool:  # blank and null too: check_gold says what is wrong
        flat = label if isinstance(label, (list, tuple)) else [label]
        return not structured(label) and all(
            x is None or isinstance(x, (str, int, float)) for x in flat)

    @classmethod
    def vote_key(cls, verdict: Verdict) -> str | None:
        return None if verdict.extracted is None else normalize_answer(verdict.extracted)

    @classmethod
    def impossible_gold(cls, gold: Any, rng: Any) -> str:
        return decoy_gold(rng)

    @classmethod
    def stating(cls, gold: Any) -> str:
        return f"\\boxed{{{gold}}}"

    @classmethod
    def zoo(cls) -> tuple[list[str], list[str], str]:
        return list(ATTACKS), list(ATTACKS), GOLD

    def __init__(self, *, timeout: float = 5.0, workers: int | None = None, mode: str = "full",
                 fallback_last_number: bool = True, fast_in_workers: bool = False,
                 **unknown: Any) -> None:
        if unknown:
            raise UserError(f"math verifier: unknown option(s) {', '.join(sorted(unknown))} "
                            "(known: timeout, workers, mode, fallback_last_number, "
                            "fast_in_workers)")
        self.fast_in_workers = bool(fast_in_workers)
        self._spread = None  # the threads driving the workers' fast path (fast_in_workers)
        _check_args(mode, timeout)
        if workers is not None and workers < 1:
            raise UserError(f"math verifier: workers must be >= 1, got {workers}")
        self.timeout, self.mode, self.fallback_last_number = float(timeout), mode, \
            bool(fallback_last_number)
        self.workers = workers or os.cpu_count() or 1
        self._pool = WorkerPool(self.workers)

    def verify(self, prediction: Any, gold: Any, finished: bool = True) -> Verdict:
        return _check(prediction, gold, self.mode, self.fallback_last_number, self.timeout,
                      self._pool, finished)

    def verify_batch(self, predictions: Sequence[Any], golds: Sequence[Any],
                     finished: Sequence[bool] | None = None) -> list[Verdict]:
        if self.fast_in_workers and self._spread is None:
            with _DEFAULT_LOCK:
                if self._spread is None:
                    self._spread = ThreadPoolExecutor(self.workers, thread_name_prefix="fast")
        return _batch(predictions, golds, self.mode, self.fallback_last_number, self.timeout,
                      self._pool, self.workers, finished, self._spread)

    def warm(self) -> None:
        """Start all sympy workers now (about 1 s each, in parallel) instead of on first need."""
        self._pool.warm()

    probe = warm  # the server's start: every worker up (no reason it could not grade)

    def close(self) -> None:
        self._pool.close()
        if self._spread is not None:
            self._spread.shutdown(wait=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def normalize_answer(ans: str) -> str:
    """A canonical key for majority voting: equal keys for simple equivalent answers
    (``\\frac12``, ``0.5``, ``1/2`` -> ``1/2``; ``50\\%`` -> ``50``; sets sorted; ``x=3`` ->
    ``3``). No sympy, bounded by the size limits; expressions keep their cleaned spelling."""
    if not isinstance(ans, str):
        ans = "" if ans is None else str(ans)
    try:
        return _key(prepare(ans))
    except TooLarge:
        return ans.strip()[:200]


def _key(n: Node) -> str:
    if n.kind == "leaf":
        num = parse_number(n.text)
        if num is not None:
            return str(num.value)
        return n.text.lower() if n.text.isalpha() and len(n.text) >= 4 else n.text
    if n.kind == "eq":
        return _key(n.items[0])
    if n.kind in ("eqn", "rel"):
        return n.src
    if n.kind == "choice":
        return n.text
    keys = [_key(c) for c in n.items]
    if n.kind in ("tuple", "labelled"):
        brackets = n.text or "()"
        return brackets[0] + ",".join(keys) + brackets[1]
    if n.kind == "ratio":
        return ":".join(keys)
    if n.kind == "matrix":
        return "matrix[" + ";".join(keys) + "]"
    return ("U" if n.kind == "union" else "") + "{" + ",".join(sorted(keys)) + "}"
