"""The checker process of assert-based tests: it runs the test code and never a line of the
program's.

Forked by the worker (`worker._Job`), confined like a program (`layers.confine_child`) under
its own uid, with its own temp dir. It holds the write end of the report pipe, which the
program process never has. In the namespace the checks run in, the target names (`scan.targets`)
are `proxy.Remote` proxies of what the program process defines; everything else (built-ins,
``math.isclose``, ``AssertionError``, the test's helpers, HumanEval's prompt) is the checker's
own, which nothing of the program can reach. A check's status: ok, wrong_answer (an assertion
failed), runtime_error, unsupported_test (an argument a proxy cannot carry), or the channel's
status when it broke (bad_reply, or program_gone, which the worker turns into the program's
death: time_limit, memory_limit, runtime_error).
"""

from __future__ import annotations

import builtins
import os
import sys

from dapo_bench.verifiers.code import child, harness, layers, proxy, wire
from dapo_bench.verifiers.code.limits import Limits


def _compile(job: dict):
    comp = (lambda src, name: compile(src, name, "exec") if src else None)
    pre = comp(harness.PREAMBLE, "<preamble>") if job.get("preamble") else None
    return (pre, comp(job.get("prompt"), "<prompt>"), comp(job.get("setup"), "<test>"),
            [comp(c, "<check>") for c in job["checks"]])


def _status(e: BaseException) -> str:
    return "wrong_answer" if isinstance(e, AssertionError) else harness._status_of(e)


def _checks(job: dict, lim: Limits, start: int, stop: int, ch: proxy.Channel, send) -> None:
    hard = int(harness.cpu_used() + lim.time_s * (stop - start) + 3)
    harness.cpu_budget(lim.time_s, hard)

    def all_fail(status: str, error: str) -> None:
        for k in range(start, stop):
            send(i=k, status=status, error=error[:300], cpu=0.0, calls=0)

    try:
        pre, prompt, setup, checks = _compile(job)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
        return all_fail("bad_test", f"the test code does not compile: {e!r}")
    try:
        hello = ch.recv()
    except proxy.Stop:
        return all_fail(*ch.broken)
    if "load" in hello:
        return all_fail(str(hello.get("load")), str(hello.get("error", "")))
    env = {"__name__": "__test__", "__builtins__": builtins}
    try:
        for code in (pre, prompt):
            if code is not None:
                exec(code, env)  # noqa: S102 - dataset text, in the checker only
        for name, n in hello.get("refs", []):
            if name in job.get("targets", []) and type(n) is int:
                env[name] = ch.remote(n, name)
        if setup is not None:
            exec(setup, env)  # noqa: S102
    except (proxy.Stop, Exception) as e:  # noqa: BLE001
        return all_fail(*(ch.broken or ("runtime_error", "test setup: " + harness._err(e))))
    for k in range(start, stop):
        harness.cpu_budget(lim.time_s, hard)
        c0, calls0 = harness.cpu_used(), ch.calls
        ch.test = k
        status, err = "ok", ""
        try:
            exec(checks[k], env)  # noqa: S102
        except BaseException as e:  # noqa: BLE001 - SystemExit inside a check fails it too
            status, err = _status(e), harness._err(e)
        if ch.broken is not None:
            status, err = ch.broken
        cpu = harness.cpu_used() - c0
        if cpu > lim.time_s and status == "ok":
            status, err = "time_limit", f"checker CPU {cpu:.2f}s over {lim.time_s:g}s"
        send(i=k, status=status, error=err, cpu=cpu, calls=ch.calls - calls0)
        if ch.broken is not None or (lim.fail_fast and status in child.FAILS):
            return
    if stop == len(checks):
        send(done=job["token"])


def run(job: dict, start: int, stop: int, fds: tuple[int, int, int], uid: int | None,
        tmpdir: str, abi: int, bpf: bytes | None) -> None:
    """Entry point in the forked checker (``fds``: request write end, reply read end, report
    pipe); never returns."""
    req_fd, rep_fd, res_fd = fds
    try:
        child.close_others(set(fds))
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
        lim = Limits.from_dict(job["limits"])
        layers.confine_child(uid, tmpdir, lim, abi, bpf)
        sys.stderr = sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - as long as the process
    except BaseException as e:  # noqa: BLE001
        try:
            wire.send(res_fd, {"fatal": f"checker confinement failed: {e!r}"[:300]})
        finally:
            os._exit(0)
    try:
        ch = proxy.Channel(req_fd, rep_fd, int(lim.output_mb * 1024 * 1024) + 4096)
        _checks(job, lim, start, stop, ch, lambda **m: wire.send(res_fd, m))
    except BaseException as e:  # noqa: BLE001
        try:
            wire.send(res_fd, {"fatal": f"checker: {e!r}"[:300]})
        except BaseException:  # noqa: BLE001, S110 - the report pipe may be gone
            pass
    os._exit(0)
