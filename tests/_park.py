"""Stop a child process at a chosen point of its run, without racing it.

A test that kills or interrupts a run "mid-stage" must not poll for a file and hope the signal
lands before the run ends: on a fast machine the run ends first (issue 33: an eval finished
all 300 problems in 1.6 s, before its SIGINT). :class:`Parked` starts ``python ARGV...`` with
a hook: once the child has logged ``rows`` rows to a file whose path ends with ``file_name`` (every resumable
artifact goes through ``dapo_bench.io``: a JSONL row through ``JsonlAppender.write``, flushed
and fsynced, counts one; a file written whole through ``atomic_write_text``, as
``atomic_write_json`` does, counts one), it tells the test through a pipe and waits, blocked on
its stdin, for the test's signal. A SIGINT then
raises KeyboardInterrupt there, as a Ctrl-C at that row would; a SIGKILL kills it there.

Covers ``python -m MODULE ...`` and ``python -c CODE`` children, and (:class:`ParkedByFifo`)
children that a launcher starts, torchrun's ranks, where no inherited pipe survives: the
launcher runs ``python tests/_park_boot.py -m MODULE ...`` (this prelude as a script), which
says "parked" on a FIFO and waits on the stdin it inherits from the launcher. Not covered:
parking at a point that writes no file through ``dapo_bench.io``.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys

# The child's prelude: patch the two writers, then run argv as python would.
BOOT = """
import os, runpy, sys
from dapo_bench import io
name, rows, chan = os.environ.pop("DAPO_BENCH_TEST_PARK").rsplit(":", 2)
rows = int(rows)
if chan.isdigit():  # an inherited pipe
    fd = int(chan)
    os.set_inheritable(fd, False)
seen = [0]
def logged(path):
    path = os.fspath(path)
    if path == name or path.endswith(os.sep + name):
        seen[0] += 1
        if seen[0] == rows:
            fd = int(chan) if chan.isdigit() else os.open(chan, os.O_WRONLY)  # or a FIFO
            os.write(fd, b"p")
            os.close(fd)
            if not sys.stdin.buffer.read(1):  # parked until the test's signal
                os._exit(75)  # the test closed our stdin (it gave up or died): stop quietly
append, replace = io.JsonlAppender.write, io.atomic_write_text
def parking_append(self, row):
    append(self, row)
    logged(self.path)
def parking_replace(path, *args, **kwargs):
    replace(path, *args, **kwargs)
    logged(path)
io.JsonlAppender.write, io.atomic_write_text = parking_append, parking_replace
if sys.argv[1] == "-m":
    sys.argv = sys.argv[2:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    code, sys.argv = sys.argv[2], ["-c", *sys.argv[3:]]
    exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
"""


class Parked:
    """``python *argv`` that parks after its ``rows``-th row to a file whose path ends with
    ``file_name`` (a name, or the last parts of a path: ``train.ckpt/latest.json``); ``rows``
    0: never parks (a child that runs on beside parked ones)."""

    def __init__(self, argv: list[str], file_name: str, rows: int,
                 env: dict | None = None, **popen_kw):
        if argv[0] not in ("-m", "-c"):
            raise ValueError(f"argv must start with -m or -c, got {argv[0]!r}")
        r, w = os.pipe()
        env = {**(os.environ if env is None else env),
               "DAPO_BENCH_TEST_PARK": f"{file_name}:{rows}:{w}"}
        self.proc = subprocess.Popen([sys.executable, "-c", BOOT, *argv], env=env,
                                     stdin=subprocess.PIPE, pass_fds=(w,), **popen_kw)
        os.close(w)
        self._r = r

    def wait_parked(self, guard_s: float = 600) -> bool:
        """Block until the child parks (True) or ends without parking (False). ``guard_s``
        only bounds a hung child; it is no synchronisation."""
        return _read_parked(self._r, guard_s)

    def close(self) -> None:
        """Kill the child if it still runs and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdin:
            self.proc.stdin.close()


def _read_parked(r: int, guard_s: float) -> bool:
    """Wait on read end ``r`` for the child's "parked" byte (False at end of file); close it."""
    try:
        ready, _, _ = select.select([r], [], [], guard_s)
        return bool(ready) and os.read(r, 1) == b"p"
    finally:
        os.close(r)


BOOT_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_park_boot.py")


class ParkedByFifo:
    """Park a launcher's child after its ``rows``-th row to ``file_name``: give the launcher
    ``env`` and the worker command ``[BOOT_SCRIPT, "-m", MODULE, ...]``, its stdin a pipe the
    test holds (the child inherits it; a byte there lets a parked child go on). Only a child
    that writes that file parks (on a run over several ranks, the rank that writes it)."""

    def __init__(self, folder: str, file_name: str, rows: int):
        path = os.path.join(folder, "parked.fifo")
        os.mkfifo(path)
        self._r = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # no writer yet: select waits
        self.env = {"DAPO_BENCH_TEST_PARK": f"{file_name}:{rows}:{path}"}

    def wait_parked(self, guard_s: float = 600) -> bool:
        """Block until a child parks; False if ``guard_s`` (a bound on a hung run, no
        synchronisation) passes first."""
        return _read_parked(self._r, guard_s)
