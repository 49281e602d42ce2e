"""The math verifier: ``verify``, ``verify_batch``, ``normalize_answer`` and ``MathVerifier``.

One check: find the answer (``mode="full"``, the default: a prediction that is itself an
answer is taken whole, a response is searched, see :mod:`extract`) or take the prediction as
the answer (``mode="answer"``; a ``\\boxed{}`` in it is still unwrapped), read the gold the same
way (:func:`extract.gold_answer`: ``$..$``, boxes, an answer phrase), clean and parse both
sides (cached), try the fast path, and send only the undecided pairs to a sympy worker with a
hard deadline. Each verdict's ``extracted`` is the answer taken from the prediction, and its
``details`` say how it was found (``answer_from``) and which rule decided (``rule``).
Reasons: ``ok``, ``wrong_answer``, ``no_answer``, ``truncated`` (below), ``timeout`` (the
item's deadline passed, reading or in sympy: the whole verification answers within
``timeout`` seconds, in this process too, see :mod:`clock`; an infrastructure outcome,
``Verdict.infra_error``, never a 0), ``verifier_error`` (a sympy worker died: the machinery's
failure, ``Verdict.infra_error``),
``too_large`` (response over 4,000,000 characters, answer over 4,000, or nesting deeper than
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

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from dapo_bench.verifiers.base import VERIFIERS, Kind, Verdict, WorkerHealth, structured
from dapo_bench.verifiers.math.item import Pending, fast, fast_many, gold_forms, slow, verdict
from dapo_bench.verifiers.math.pool import Timeout, WorkerError, WorkerPool
from dapo_bench.verifiers.math.probes import ATTACKS, GOLD, decoy_gold
from dapo_bench.verifiers.math.votes import normalize_answer

from dapo_bench.errors import UserError

MODES = ("full", "answer")
SMALL_BATCH = 32  # fewer sympy pairs than this in a batch: no threads, one worker
SPREAD_MIN = 16  # pairs a batch needs before ``fast_in_workers`` sends its fast path out
SPREAD_CHUNK = 64  # fewest pairs of a chunk sent to one worker (so a small batch is one trip)


def _check(prediction: Any, gold: Any, mode: str, fallback: bool, timeout: float,
           pool: WorkerPool, finished: bool = True) -> Verdict:
    r = fast(prediction, gold, mode, fallback, finished, timeout)
    return r if isinstance(r, Verdict) else slow(r, timeout, pool)


def _fast_spread(predictions: Sequence, golds: Sequence, mode: str, fallback: bool,
                 finished: Sequence[bool], timeout: float, pool: WorkerPool, workers: int,
                 ex: ThreadPoolExecutor) -> list[Verdict | Pending]:
    """:func:`fast_many` in up to *workers* contiguous chunks of at least
    :data:`SPREAD_CHUNK` pairs, each in a worker process (the calling process stays free, e.g.
    for a server's HTTP work; concurrent small batches take a worker each). A chunk whose
    worker died or failed is done in this thread instead: the same code, the same verdicts.
    Each pair keeps its own deadline in the worker, so a chunk is given the sum and a second
    (a worker past that is stuck: its pairs are ``timeout``, not read again here)."""
    n = len(predictions)
    size = max(-(-n // workers), SPREAD_CHUNK)

    def one(lo: int) -> list:
        hi = min(lo + size, n)
        args = (list(predictions[lo:hi]), list(golds[lo:hi]), mode, fallback,
                [bool(f) for f in finished[lo:hi]], timeout)
        try:
            return pool.run("fast", args, 1.0 + timeout * (hi - lo))
        except Timeout:
            return [verdict(False, "timeout", None, timeout, "answer", "worker past the deadline")
                    for _ in range(lo, hi)]
        except WorkerError:  # WorkerDied is a WorkerError
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
        out = _fast_spread(predictions, golds, mode, fallback, finished, timeout, pool, workers,
                           spread)
    else:
        out = fast_many(predictions, golds, mode, fallback, finished, timeout)
    pending = {i: r for i, r in enumerate(out) if isinstance(r, Pending)}
    if workers <= 1 or len(pending) < SMALL_BATCH:
        decided = [slow(p, timeout, pool) for p in pending.values()]
    else:
        with ThreadPoolExecutor(max_workers=workers) as ex:
            decided = list(ex.map(lambda p: slow(p, timeout, pool), pending.values()))
    settled = dict(zip(pending, decided))
    return [settled[i] if isinstance(r, Pending) else r for i, r in enumerate(out)]


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
    version = "4.0"  # 2.1: a cut-off response needs a marked answer; 3.0: issue 31 (docs);
    # 3.1: the final sentence comes before a closing check; a recent answer phrase beats it;
    # 4.0: issue 42 (linear time, one deadline for the whole item, the v4 answer shapes)
    fields = ("prediction", "gold")
    # its kind (verifiers.base): a completion is its text (Kind's); a gold a string, number or
    # list of them; maj@k votes on the extracted answer; the server runs the fast path in workers
    column, prediction_types, votes = "answer", (str, int, float), True
    serve_options: ClassVar[dict] = {"fast_in_workers": True}

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
        self._spread: ThreadPoolExecutor | None = None  # the threads driving the workers' fast path (fast_in_workers)
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

    def worker_health(self) -> WorkerHealth:
        """Its sympy workers, from its pool (``WorkerPool.health``)."""
        return self._pool.health()

    def close(self) -> None:
        self._pool.close()
        if self._spread is not None:
            self._spread.shutdown(wait=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
