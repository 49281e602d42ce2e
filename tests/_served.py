"""A real OpenAI-compatible server for tests, and a fault-injecting proxy beside it.

:class:`Served` starts ``transformers serve MODEL`` on loopback (a free port, CPU, one torch
thread) and waits until its ``/health`` answers (a real condition, bounded by a guard); it is
ended by its pid only. :class:`FaultProxy` sits in front of it: each distinct request body gets
the fault its plan names on its first try (429, 500, ``slow``: held past the client's timeout,
``drop``: the connection closed with no answer, ``abort``: a 200 whose finish_reason says the
server gave up, ``fail``: 500 on every try) and is forwarded
to the real server otherwise, so which faults happen does not depend on timing. It can also
demand an API key. The main path of the tests is the real server; the proxy only adds faults.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from dapo_bench.generation.launched import free_port


class Served:
    """A server for ``model`` on 127.0.0.1 (its own process, one torch thread): ``transformers
    serve`` by default, or ``argv(model, port)`` (``vllm serve`` in
    tests/generation/test_openai_vllm.py)."""

    def __init__(self, model: str | os.PathLike, log: Path, argv=None, env: dict | None = None,
                 guard_s: float = 600):
        self.model, self.log_path = str(model), log
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **(env or {})}
        argv = argv or (lambda m, port: [
            sys.executable, "-m", "transformers.cli.transformers", "serve", m, "--host",
            "127.0.0.1", "--port", str(port), "--device", "cpu"])
        self._log = open(log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(argv(self.model, self.port), stdout=self._log,
                                     stderr=subprocess.STDOUT, env=env)
        self._wait_healthy(guard_s)

    def _wait_healthy(self, guard_s: float) -> None:
        import httpx

        end = time.monotonic() + guard_s  # a bound on a hung start, not a synchronisation
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited {self.proc.returncode}: "
                                   f"{self.log_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)  # polling the real condition (the server answers), not a guess
        self.stop()
        raise RuntimeError(f"transformers serve did not answer in {guard_s}s")

    def stop(self) -> None:
        """SIGKILL this server (by its pid) and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._log.close()


class FaultProxy:
    """An HTTP proxy to ``upstream`` (a base URL ending in /v1) that injects faults: ``plan``
    is a list of fault names given to distinct request bodies in the order they first arrive
    (each body's first try only; ``fail`` on every try); ``key``: the bearer key it demands
    (401 otherwise)."""

    def __init__(self, upstream: str, plan: list[str | None] = (), key: str | None = None):
        import httpx

        self.upstream, self.plan, self.key = upstream.rstrip("/"), list(plan), key
        self.tries: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.bodies: dict[str, str | None] = {}
        self.release = threading.Event()  # ends the holds of ``slow`` faults
        self._lock = threading.Lock()
        self._http = httpx.Client(timeout=600)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                if proxy._key_ok(self):
                    proxy._relay(self, None)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                proxy._post(self, body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _fault(self, body: bytes) -> str | None:
        h = hashlib.sha256(body).hexdigest()
        with self._lock:
            if h not in self.bodies:
                self.bodies[h] = self.plan[len(self.bodies)] if len(self.bodies) < len(
                    self.plan) else None
            self.tries[h] += 1
            fault = self.bodies[h]
            if fault == "fail" or (fault and self.tries[h] == 1):
                self.faults[fault] += 1
                return fault
        return None

    def _key_ok(self, h: BaseHTTPRequestHandler) -> bool:
        if self.key is None or h.headers.get("authorization") == f"Bearer {self.key}":
            return True
        _send(h, 401, b'{"error": {"message": "bad key"}}')
        return False

    def _post(self, h: BaseHTTPRequestHandler, body: bytes) -> None:
        if not self._key_ok(h):
            return None
        fault = self._fault(body)
        if fault == "429":
            return _send(h, 429, b'{"error": "slow down"}', {"Retry-After": "0"})
        if fault in ("500", "fail"):
            return _send(h, 500, b'{"error": "injected"}')
        if fault == "slow":
            self.release.wait(120)  # past the client's timeout; then no answer at all
            h.close_connection = True
            return None
        if fault == "abort":  # a 200 with no answer (vLLM's finish_reason under pressure)
            return _send(h, 200, b'{"choices": [{"index": 0, "text": "", "message": '
                         b'{"role": "assistant", "content": ""}, "finish_reason": "abort"}]}')
        if fault == "drop":
            h.close_connection = True  # nothing written: the client sees the connection close
            return None
        self._relay(h, body)

    def _relay(self, h: BaseHTTPRequestHandler, body: bytes | None) -> None:
        url = self.upstream + h.path.removeprefix("/v1")
        headers = {"content-type": "application/json"}
        resp = (self._http.get(url) if body is None
                else self._http.post(url, content=body, headers=headers))
        _send(h, resp.status_code, resp.content)

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._http.close()


def _send(h: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict | None = None):
    h.send_response(status)
    h.send_header("content-type", "application/json")
    h.send_header("content-length", str(len(body)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(body)
