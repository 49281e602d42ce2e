"""The public API of the code verifier: `run_tests`, `run_tests_batch`, `CodeVerifier`,
`check_layers` (and, from `kind`, `extract_code`).

A verdict passes only when every test passes, the sandbox's network and write isolation are
both active (otherwise every verdict is ``sandbox_error``), and, for assert-based tests, the
checker finished (its completion token came back) and called the program at least once. ``Verdict.reason`` is "ok" or the first failing test's status;
``details`` holds ``statuses`` (one per test: ok / wrong_answer / runtime_error / time_limit /
memory_limit / output_limit / sandbox_error / skipped, and the reasons that are never the
program's pass: no_tests (nothing to check, or checks that never call the program),
unsupported_test (checks a proxy cannot express), bad_reply (a reply that does not decode or is
too large), checker_crashed (the checker died or did not finish), bad_test (test code that does
not compile)), ``first_failure`` (test index, status, error), ``form``, ``n_tests`` and
``cpu_s``.
"""

from __future__ import annotations

import atexit
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from dapo_bench.verifiers.base import (
    VERIFIERS,
    Kind,
    Verdict,
    WorkerHealth,
    answer_text,
    completion_text,
    structured,
)
from dapo_bench.verifiers.code.compare import stdout_matches, value_matches
from dapo_bench.verifiers.code.formats import Spec, parse_tests
from dapo_bench.verifiers.code.kind import check_tests, impossible_tests, program_from
from dapo_bench.verifiers.code.limits import Limits
from dapo_bench.verifiers.code.pool import Pool

from dapo_bench.errors import UserError


def grade(spec: Spec, head: dict, blobs: list[bytes], limits: Limits, token: str,
          seconds: float) -> Verdict:
    """Turn a worker's raw results into a Verdict (comparisons happen here, in the parent)."""
    n = spec.n_tests
    statuses = ["skipped"] * n
    errors = [""] * n
    cpu = 0.0
    for r in head.get("results", []):
        i, st = int(r["i"]), str(r["status"])
        if not 0 <= i < n:
            continue
        cpu += float(r.get("cpu") or 0.0)
        if st == "ok" and spec.kind == "stdio":
            blob = blobs[r["blob"]] if "blob" in r else b""
            if not stdout_matches(blob, spec.expected[i], limits.float_tol):
                st = "wrong_answer"
        elif st == "ok" and spec.kind == "call" and \
                not value_matches(r.get("value"), spec.expected[i], limits.float_tol):
            st = "wrong_answer"
        statuses[i], errors[i] = st, str(r.get("error") or "")
    fatal = head.get("fatal")
    if fatal:
        k = next((i for i, s in enumerate(statuses) if s == "skipped"), 0 if n else None)
        if k is not None:
            statuses[k], errors[k] = str(head.get("reason") or "sandbox_error"), str(fatal)[:300]
    if spec.kind == "assert" and n and all(s == "ok" for s in statuses):
        if token not in head.get("tokens", []):
            statuses[-1], errors[-1] = "checker_crashed", "the checker did not finish"
        elif not sum(int(r.get("calls") or 0) for r in head.get("results", [])):
            statuses[-1], errors[-1] = "no_tests", "the checks never called the program"
    first = next((i for i, s in enumerate(statuses) if s != "ok"), None)
    passed = first is None and n > 0
    reason = "ok" if passed else statuses[first] if first is not None else "no_tests"
    details = {
        "form": spec.form, "n_tests": n, "statuses": statuses, "cpu_s": round(cpu, 4),
        "first_failure": None if first is None else
        {"test": first, "status": statuses[first], "error": errors[first]},
    }
    return Verdict(passed=passed, reason=reason, seconds=seconds, details=details)


def refused(spec: Spec) -> Verdict | None:
    """The verdict of tests that are not run at all: none to run (``no_tests``), or checks a
    proxy cannot express (``unsupported_test``: see `scan.proxy_limits`); else None."""
    if spec.n_tests == 0 or spec.unsupported == "no_assert":
        return _error_verdict("no_tests", "there is nothing to check", spec)
    if spec.unsupported:
        return _error_verdict("unsupported_test", "the checks need what a proxy of the "
                              f"program cannot carry: {spec.unsupported}", spec)
    return None


def _error_verdict(reason: str, error: str, spec: Spec | None = None) -> Verdict:
    n = spec.n_tests if spec else 0
    return Verdict(False, reason, details={
        "form": spec.form if spec else None, "n_tests": n, "statuses": [reason] * n,
        "cpu_s": 0.0, "first_failure": {"test": 0, "status": reason, "error": error}})


class _Runner:
    """A pool plus the isolation check; runs specs and grades them."""

    def __init__(self, workers: int | None = None, *, landlock: bool = True):
        self.pool = Pool(workers, landlock=landlock)
        self.ok, self.why = self.pool.isolated()

    def run(self, programs: list[str], specs: list[Spec], limits: Limits,
            progress: Callable[[int], None] | None = None) -> list[Verdict]:
        if not self.ok:
            return [_error_verdict("sandbox_error", f"sandbox not isolated: {self.why}", s)
                    for s in specs]
        refusals = [refused(s) for s in specs]
        todo = [k for k, v in enumerate(refusals) if v is None]
        tokens = {k: secrets.token_hex(16) for k in todo}
        jobs = [specs[k].job(programs[k], limits.to_dict(), tokens[k]) for k in todo]
        t0 = time.perf_counter()
        done = (lambda j: progress(todo[j])) if progress is not None else None
        raw = self.pool.run(jobs, on_done=done) if jobs else []
        wall = time.perf_counter() - t0
        graded = {k: grade(specs[k], head, blobs, limits, tokens[k],
                           float(head.get("seconds", wall)))
                  for k, (head, blobs) in zip(todo, raw)}
        if progress is not None:
            for k in range(len(specs)):
                if k not in tokens:
                    progress(k)
        return [graded[k] if v is None else v for k, v in enumerate(refusals)]

    def close(self) -> None:
        self.pool.close()


_default: dict[int | None, _Runner] = {}
_default_lock = threading.Lock()


def _shared(workers: int | None) -> _Runner:
    with _default_lock:
        if workers not in _default:
            _default[workers] = _Runner(workers)
        return _default[workers]


@atexit.register
def _close_shared() -> None:
    for r in _default.values():
        r.close()
    _default.clear()


def _check_inputs(programs: list, tests_list: list) -> list[Spec]:
    if len(programs) != len(tests_list):
        raise UserError(f"{len(programs)} programs but {len(tests_list)} test sets")
    for i, p in enumerate(programs):
        if not isinstance(p, str):
            raise UserError(f"program[{i}]: expected source text, got {type(p).__name__}")
    return [parse_tests(t, f"tests[{i}]") for i, t in enumerate(tests_list)]


def run_tests(program: str, tests: Any, limits: Limits | None = None) -> Verdict:
    """Run one program against its tests in the sandbox (shared pool, one worker per core)."""
    return run_tests_batch([program], [tests], limits)[0]


def run_tests_batch(programs: list[str], tests_list: list[Any], limits: Limits | None = None,
                    workers: int | None = None,
                    progress: Callable[[int], None] | None = None) -> list[Verdict]:
    """Run many programs (in order) on a shared pool; ``progress(k)`` after each."""
    specs = _check_inputs(programs, tests_list)
    return _shared(workers).run(list(programs), specs, limits or Limits(), progress)


def check_layers(workers: int | None = 1) -> dict[str, tuple[bool, str]]:
    """Layer name -> (active, detail), probed from inside a confined child."""
    return dict(_shared(workers).pool.layers())


@VERIFIERS.register("code", help="sandboxed Python programs vs tests (stdin/stdout, call, "
                                 "assert: TACO, LiveCodeBench, HumanEval, MBPP, LeetCode)")
class CodeVerifier(Kind):
    """``verify(program, tests) -> Verdict``; owns its worker pool until `close`. Safe to call
    from several threads at once (verl's reward loop scores items concurrently): they share
    the pool's workers, one job per worker at a time."""

    name = "code"
    # 2.0: assert-based checks in their own process (issue 14); 2.1: candidates hash with seed 0,
    # a set crosses the proxy in its sender's order, programs compile with dont_inherit (32)
    version = "2.1"
    fields = ("program", "tests")
    # its kind (verifiers.base, verifiers.code.kind): a completion's program; a gold is tests
    # (structured data); serving: one lane of one sandbox worker per program at a time, so a
    # program that sleeps to its limit holds a lane, not a batch
    column, serve_lanes = "tests", True

    @classmethod
    def input_from(cls, completion: Any, gold: Any = None, prefix: str | None = None,
                   where: str = "completion") -> str:
        return program_from(answer_text(completion_text(completion, where)), gold, prefix)

    @classmethod
    def check_gold(cls, gold: Any, where: str = "tests") -> None:
        check_tests(gold, where)

    @classmethod
    def claims(cls, label: Any) -> bool:
        return structured(label)

    @classmethod
    def impossible_gold(cls, gold: Any, rng: Any) -> dict:
        return impossible_tests(gold)

    @classmethod
    def zoo(cls) -> tuple[list[str], list[str], dict]:
        # imported here, never at module level: the sandbox workers import this module, and
        # a program forked from one must not find the zoo's checks in its memory (the
        # memory_lookup attack looks for them)
        from dapo_bench.verifiers.code.attacks import zoo

        return zoo()

    def probe(self) -> str | None:
        """Run a hello program: why the sandbox cannot grade (e.g. not isolated), or None."""
        v = self.verify("print(1)", {"inputs": [""], "outputs": ["1\n"]})
        return None if v.passed else (v.details.get("first_failure") or {}).get("error",
                                                                                v.reason)

    def __init__(self, *, timeout: float | None = None, workers: int | None = None,
                 limits: Limits | dict | None = None, **unknown: Any):
        if unknown:
            raise UserError(f"code verifier: unknown option(s) {sorted(unknown)} "
                            "(known: timeout, workers, limits)")
        if isinstance(limits, dict):
            limits = Limits.from_dict(limits)
        lim: Limits = limits or Limits()
        if timeout is not None:
            lim = Limits.from_dict(dict(lim.to_dict(), time_s=float(timeout)))
        self.limits, self.workers = lim, workers
        self._runner: _Runner | None = None
        self._lock = threading.Lock()  # one pool, even when first called from several threads

    def _get(self) -> _Runner:
        with self._lock:
            if self._runner is None:
                self._runner = _Runner(self.workers)
            return self._runner

    def verify(self, program: str, tests: Any) -> Verdict:
        return self.verify_batch([program], [tests])[0]

    def verify_batch(self, programs: list[str], tests_list: list[Any],
                     progress: Callable[[int], None] | None = None,
                     finished: Any = None) -> list[Verdict]:
        """``finished`` (whether each completion ended before the token cap) is accepted and
        not used: a program is judged by running it, whatever prose the cap cut off after it."""
        specs = _check_inputs(programs, tests_list)
        return self._get().run(list(programs), specs, self.limits, progress)

    def worker_health(self) -> WorkerHealth:
        """Its sandbox workers, from its pool (``Pool.health``; none before its first use)."""
        runner = self._runner
        return runner.pool.health() if runner is not None else WorkerHealth()

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None
