"""A server this process starts itself, for one policy's evaluation (``train --eval-serve CMD``).

``CMD`` is a shell command line with placeholders: ``{model}`` (the policy's saved directory,
or the reference's hub id, shell-quoted), ``{port}`` (a free port on 127.0.0.1, required) and
``{rank}`` (this process's rank under torchrun: ``CUDA_VISIBLE_DEVICES={rank} vllm serve ...``
gives each rank its own GPU). :class:`LaunchedServer` runs it in ``/bin/sh`` in a session of
its own, writes its output to a log file, and waits until ``GET /v1/models`` answers 200 (a
server that exits first, or does not answer within ``start_timeout`` seconds, stops the run
with the log's last lines in the message); :meth:`LaunchedServer.stop` ends that session
(SIGTERM, then SIGKILL after ``STOP_GRACE`` seconds): every process the command started, and
nothing else. The evaluation then talks to ``base_url`` with the ``openai`` backend, asking for
the model by the name ``{model}`` was given (vLLM, SGLang and ``transformers serve {model}``
serve a model under its path).

Not covered: servers on another machine (``dapo-bench eval --backend openai --base-url``),
servers that do not answer ``/v1/models``.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

from dapo_bench.errors import RunStopped, UserError

PLACEHOLDERS = ("model", "port", "rank")
STOP_GRACE = 30.0


class ServerFailed(RunStopped):
    """The launched server exited or did not answer before its start timeout."""


def check_serve_cmd(cmd: str, flag: str = "--eval-serve") -> str:
    """``cmd`` when it is a usable template: ``{port}`` in it, no other placeholder."""
    try:
        text = cmd.format(model="M", port=1, rank=0)
    except (KeyError, IndexError, ValueError) as e:
        raise UserError(f"{flag} {cmd!r}: bad placeholder {e} (placeholders: "
                        f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}; a literal brace "
                        f"is doubled: {{{{ }}}})") from None
    if "{port}" not in cmd or not text.strip():
        raise UserError(f"{flag} {cmd!r}: the command must name {{port}} (the loopback port "
                        f"the server listens on), e.g. 'vllm serve {{model}} --port {{port}}'")
    return cmd


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LaunchedServer:
    """``cmd`` started for ``model`` and answering at :attr:`base_url` (a context manager)."""

    def __init__(self, cmd: str, model: str, log: Path, *, rank: int = 0,
                 start_timeout: float = 600.0):
        import httpx

        self.port, self.log = free_port(), Path(log)
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.command = check_serve_cmd(cmd).format(model=shlex.quote(model), port=self.port,
                                                   rank=rank)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            out.write(f"$ {self.command}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(["/bin/sh", "-c", self.command], stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        try:
            self._wait(httpx, start_timeout)
        except BaseException:
            self.stop()
            raise

    def _wait(self, httpx, start_timeout: float) -> None:
        end = time.monotonic() + start_timeout
        while True:
            if self.proc.poll() is not None:
                raise ServerFailed(f"--eval-serve: the server exited with {self.proc.returncode}"
                                   f" before it answered ({self.log}): {self._tail()}")
            try:
                if httpx.get(self.base_url + "/models", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > end:
                raise ServerFailed(f"--eval-serve: the server did not answer {self.base_url}"
                                   f"/models within {start_timeout:g}s ({self.log}): "
                                   f"{self._tail()}")
            time.sleep(0.5)  # polls the real condition: the server answers

    def _tail(self, n: int = 400) -> str:
        text = self.log.read_text(errors="replace")
        return " | ".join(text[-n:].strip().splitlines()[-5:])

    def stop(self) -> None:
        """End the server's session (its shell and all it started: SIGTERM, then SIGKILL
        after ``STOP_GRACE`` seconds) and reap the shell."""
        for sig, grace in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, 5.0)):
            if not _group_alive(self.proc):
                break
            try:
                os.killpg(self.proc.pid, sig)  # the group this process created (its pid)
            except ProcessLookupError:
                break
            end = time.monotonic() + grace
            while _group_alive(self.proc) and time.monotonic() < end:
                time.sleep(0.1)
        self.proc.wait()

    def __enter__(self):  # -> LaunchedServer
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _group_alive(proc: subprocess.Popen) -> bool:
    """Whether a process of the group ``proc`` leads still runs (the shell is reaped first, so
    that it does not count as a zombie; signal 0 tests, it sends nothing)."""
    proc.poll()
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
