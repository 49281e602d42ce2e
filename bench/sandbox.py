"""Throughput of the code sandbox vs two peer graders, on the same programs and tests.

    nice -n 5 unshare --pid --fork --mount-proc python3 bench/sandbox.py [--reps 8]

Workload: real codeforces problems with hand-written stdin/stdout solutions, every multi-case
test also split into one-case tests (bench/codeforces_stdin.py). Graders, all on ``--workers``
processes at once:

* ours: `dapo_bench.verifiers.code.run_tests_batch`, fully confined (every layer active).
* LiveCodeBench-style (as lcb_runner's check_correctness / testing_util): a
  ``multiprocessing.Manager`` and a forked ``Process`` per program; in it, per test, stdin
  patched with ``unittest.mock``, stdout captured, faulthandler and a SIGALRM timeout (no
  confinement).
* TACO-style: ``subprocess.run([python, -c, program])`` per test (no confinement); it runs
  ``--taco-reps`` copies of the workload only, as it is slow.

Prints tests/s for each and the ratios; the machine may be shared, so compare within a run.

``--before-after`` instead measures this tree against the one before the program/checker split
(assert-based, stdin and call-based workloads, interleaved rounds, medians): see
bench/sandbox_split.py.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing as mp
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from codeforces_stdin import workload  # bench/, beside this script
from dapo_bench.verifiers.code import Limits, check_layers, run_tests_batch
from dapo_bench.verifiers.code.compare import stdout_matches
from dapo_bench.verifiers.code.probe import isolated

TIME_S = 4.0


def ours(programs, inputs, outputs, workers: int) -> tuple[float, list[bool]]:
    tests = [{"inputs": i, "outputs": o} for i, o in zip(inputs, outputs)]
    run_tests_batch(programs[:1], tests[:1], Limits(time_s=TIME_S), workers)  # start the pool
    t0 = time.perf_counter()
    verdicts = run_tests_batch(programs, tests, Limits(time_s=TIME_S), workers)
    return time.perf_counter() - t0, [v.passed for v in verdicts]


def _lcb_child(program: str, inputs: list[str], result) -> None:
    """As lcb_runner's testing_util: compile once; per test, stdin patched with unittest.mock,
    stdout captured, faulthandler on, a SIGALRM timeout."""
    import faulthandler
    from unittest.mock import mock_open, patch

    code = compile(program, "<program>", "exec")
    for inp in inputs:
        faulthandler.enable()
        signal.alarm(int(TIME_S))
        buf = io.StringIO()
        lines = iter(inp.split("\n"))
        try:
            with patch("builtins.open", mock_open(read_data=inp)), \
                    patch("sys.stdin", io.StringIO(inp)), \
                    patch("sys.stdin.readline", lambda *a, it=lines: next(it)), \
                    patch("sys.stdin.readlines", lambda *a, s=inp: s.split("\n")), \
                    patch("sys.stdin.read", lambda *a, s=inp: s), \
                    contextlib.redirect_stdout(buf):
                exec(code, {"__name__": "__main__"})  # noqa: S102 - the peer's way
            result.append(buf.getvalue())
        except BaseException:  # noqa: BLE001
            result.append(None)
        finally:
            signal.alarm(0)
            faulthandler.disable()


def _lcb_one(program: str, inputs: list[str], outputs: list[str]) -> bool:
    """As lcb_runner's check_correctness: a Manager list and a Process per program."""
    ctx = mp.get_context("fork")
    with ctx.Manager() as manager:
        result = manager.list()
        p = ctx.Process(target=_lcb_child, args=(program, inputs, result))
        p.start()
        p.join(timeout=(TIME_S + 1) * len(inputs) + 5)
        if p.is_alive():
            p.kill()
        got = list(result)
    return len(got) == len(outputs) and all(
        g is not None and stdout_matches(g.encode(), o) for g, o in zip(got, outputs))


def _taco_one(program: str, inputs: list[str], outputs: list[str]) -> bool:
    ok = True
    for inp, out in zip(inputs, outputs):
        r = subprocess.run([sys.executable, "-c", program], input=inp.encode(),
                           capture_output=True, timeout=TIME_S, check=False)
        ok = ok and r.returncode == 0 and stdout_matches(r.stdout, out)
    return ok


def peer(fn, programs, inputs, outputs, workers: int):
    t0 = time.perf_counter()
    with ThreadPoolExecutor(workers) as ex:
        passed = list(ex.map(fn, programs, inputs, outputs))
    return time.perf_counter() - t0, passed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=8, help="copies of the workload")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--taco-reps", type=int, default=2,
                    help="copies run by the (slow) subprocess-per-test grader")
    ap.add_argument("--before-after", action="store_true",
                    help="instead: this tree vs --before on assert, stdin and call workloads "
                         "(bench/sandbox_split.py)")
    ap.add_argument("--before", default=None, help="git revision of the 'before' tree "
                    "(default: the commit before the program/checker split)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (--before-after)")
    args = ap.parse_args()
    if args.before_after:
        from sandbox_split import before_after

        before_after(args.before, args.rounds, args.workers)
        return
    layers = check_layers()
    ok, why = isolated(layers)
    active = [k for k, (a, _) in layers.items() if a]
    print(f"sandbox layers active: {', '.join(active)} ({'isolated' if ok else why})")
    p, i, o = workload()
    programs, inputs, outputs = p * args.reps, i * args.reps, o * args.reps
    n_tests = sum(map(len, inputs))
    print(f"workload: {len(programs)} programs, {n_tests} stdin tests, {args.workers} workers")
    rows = [("ours (confined)", ours(programs, inputs, outputs, args.workers)),
            ("LCB-style in-process", peer(_lcb_one, programs, inputs, outputs, args.workers)),
            ("TACO-style subprocess/test", peer(_taco_one, p * args.taco_reps, i * args.taco_reps,
                                                o * args.taco_reps, args.workers))]
    counts = {name: n_tests for name, _ in rows}
    counts["TACO-style subprocess/test"] = sum(map(len, i)) * args.taco_reps
    base = {name: counts[name] / secs for name, (secs, _) in rows}
    print(f"{'grader':28s} {'seconds':>8s} {'tests/s':>9s} {'passed':>8s} {'ours is':>8s}")
    for name, (secs, passed) in rows:
        ratio = base["ours (confined)"] / base[name]
        print(f"{name:28s} {secs:8.2f} {base[name]:9.1f} {sum(passed):4d}/{len(passed):<3d} "
              f"{ratio:7.2f}x")


if __name__ == "__main__":
    main()
