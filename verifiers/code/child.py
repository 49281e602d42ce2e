"""The confined child: one fork of a worker that runs stdin/stdout or call-based tests
``start..stop-1`` of one program (assert-based tests: `checker` and `zygote`).

`run(...)` never returns. It closes every inherited descriptor but its report pipe and the
per-test output memfds, applies all child layers (`layers.confine_child`), compiles the program
once, then runs the tests one after another in this process: before each, the CPU rlimit is
moved to allow ``time_s`` more seconds; after each, it sends one frame (status, error, CPU
seconds, call result, ``dirty``) to the worker. It stops early when a test leaves a thread or a
process behind (``dirty``: the worker forks a fresh child for the next test) or, with
``fail_fast``, after a failing status. The worker is the watchdog: it kills this child (and its
whole process group) when a test overruns its wall time, and judges deaths.

Not here: comparing outputs; the expected outputs are never sent to the worker.
"""

from __future__ import annotations

import os
import sys
from builtins import BaseException, int, range, str  # noqa: UP029 - see harness.py

from dapo_bench.verifiers.code import harness, layers, probe, wire
from dapo_bench.verifiers.code.limits import Limits

FAILS = ("runtime_error", "time_limit", "memory_limit", "output_limit", "sandbox_error",
         "unsupported_test", "bad_reply", "program_gone", "checker_crashed", "bad_test")


def close_others(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _compile(job: dict):
    code = harness.compile_source(job["program"], "<program>")
    preamble = harness.compile_source(harness.PREAMBLE, "<preamble>") if job.get("preamble") \
        else None
    return code, preamble


def _tests(job, lim: Limits, start: int, stop: int, outs: list[int], res_fd: int) -> None:
    send = (lambda **m: wire.send(res_fd, m))
    kind = job["kind"]
    hard = int(harness.cpu_used() + lim.time_s * (stop - start) + 3)
    harness.cpu_budget(lim.time_s, hard)
    if kind == "probe":
        send(i=0, status="ok", error="", cpu=0.0, probe=probe.probe_inside())
        return
    try:
        code, preamble = _compile(job)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
        for k in range(start, stop):
            send(i=k, status="runtime_error", error=f"compile: {e!r}"[:300], cpu=0.0)
        return
    ns = None
    if kind == "call":
        try:
            ns = harness.load_program(code, preamble)
        except BaseException as e:  # noqa: BLE001 - SystemExit too: exit before the tests
            st = harness._status_of(e)
            for k in range(start, stop):
                send(i=k, status=st, error="loading the program: " + harness._err(e), cpu=0.0)
            return
    for k in range(start, stop):
        harness.cpu_budget(lim.time_s, hard)
        c0 = harness.cpu_used()
        out_fd = outs[k - start]
        value = None
        if kind == "stdio":
            data = job["cases"][k].encode("utf-8", "surrogateescape")
            status, err = harness.stdio_test(code, data, out_fd)
        else:
            assert ns is not None  # kind "call" (this process runs stdio, call and probe jobs)
            status, err, value = harness.call_test(ns, job.get("fn_name") or "", job["cases"][k],
                                                   out_fd)
        cpu = harness.cpu_used() - c0
        if cpu > lim.time_s and status != "time_limit":
            status, err = "time_limit", f"CPU {cpu:.2f}s over {lim.time_s:g}s"
        left_over = harness.dirty()
        msg = {"i": k, "status": status, "error": err, "cpu": cpu, "dirty": left_over}
        if value is not None:
            msg["value"] = value
        send(**msg)
        if left_over or (lim.fail_fast and status in FAILS):
            return


def run(job: dict, start: int, stop: int, outs: list[int], res_fd: int, uid: int | None,
        tmpdir: str, abi: int, bpf: bytes | None) -> None:
    """Entry point in the forked child; never returns."""
    try:
        close_others({res_fd, *outs})
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
        lim = Limits.from_dict(job["limits"])
        layers.confine_child(uid, tmpdir, lim, abi, bpf)
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    except BaseException as e:  # noqa: BLE001
        try:
            wire.send(res_fd, {"fatal": f"confinement failed: {e!r}"[:300]})
        finally:
            os._exit(0)
    try:
        _tests(job, lim, start, stop, outs, res_fd)
    except BaseException as e:  # noqa: BLE001 - e.g. the program broke the harness
        try:
            wire.send(res_fd, {"error": f"harness: {e!r}"[:300]})
        except BaseException:  # noqa: BLE001, S110 - the report pipe may be gone
            pass
    os._exit(0)
