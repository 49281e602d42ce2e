"""A real ``dapo-bench serve`` in a subprocess on a free loopback port, driven over HTTP
(serve/test_serve.py, serve/test_interop_openrlhf.py, verifiers/math/test_math_deadline.py)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

from _wait import until

CLI = [sys.executable, "-m", "dapo_bench.cli"]


class Server:
    """``dapo-bench serve --port 0 ...``, its URL read from the line it prints when listening."""

    def __init__(self, *flags: str, ready: tuple[str, ...] = ("code", "math")) -> None:
        self.proc = subprocess.Popen([*CLI, "serve", "--port", "0", *flags],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        line = ""
        while "listening on" not in line:
            left = deadline - time.monotonic()
            if self.proc.poll() is not None or left <= 0 or \
                    not select.select([self.proc.stdout], [], [], left)[0]:
                self.stop()
                raise AssertionError(f"server did not start: {self.proc.stderr.read()[-2000:]}")
            line = self.proc.stdout.readline()
        self.url = line.split("listening on ")[1].strip()
        self.err = ""  # what stderr_line read and has not matched yet
        code, health = self.get("/health")
        if not (code == 200 and all(health["verifiers"][n] == "ok" for n in ready)):
            self.stop()  # never leave a server behind a failed start
            raise AssertionError(f"server not ready: {health}")

    def request(self, path: str, data: bytes | None = None, timeout: float = 60):
        req = urllib.request.Request(self.url + path, data=data,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read(), r.headers
        except urllib.error.HTTPError as e:
            return e.code, e.read(), e.headers

    def post(self, path: str, obj) -> tuple[int, dict, dict]:
        code, body, headers = self.request(path, json.dumps(obj).encode())
        return code, json.loads(body), headers

    def get(self, path: str):
        code, body, _ = self.request(path)
        return code, (json.loads(body) if path == "/health" else body.decode())

    def metric(self, name: str) -> float:
        lines = self.get("/metrics")[1].splitlines()
        return sum(float(ln.rsplit(" ", 1)[1]) for ln in lines if ln.startswith(name))

    def wait(self, cond, what: str, limit: float = 30.0) -> None:
        until(cond, what, limit)

    def stderr_line(self, want, limit: float = 30.0) -> str:
        """The next line of the server's stderr that satisfies ``want`` (read unbuffered)."""
        deadline, fd = time.monotonic() + limit, self.proc.stderr.fileno()
        while True:
            while "\n" in self.err:
                line, self.err = self.err.split("\n", 1)
                if want(line):
                    return line
            left = deadline - time.monotonic()
            assert left > 0 and select.select([fd], [], [], left)[0], \
                "no such line on the server's stderr"
            self.err += os.read(fd, 1 << 16).decode(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)
