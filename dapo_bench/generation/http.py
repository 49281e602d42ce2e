"""HTTP for the ``openai`` backend: a bounded number of requests in flight, retries with
backoff, a per-request timeout, and what went wrong counted.

- :class:`Client` wraps one ``httpx.Client`` (its connection pool as large as the concurrency)
  and posts JSON. A request is retried on 429, 408, 5xx, a timeout, a refused connection and
  a connection the server dropped; it waits ``backoff * 2**attempt`` seconds (at most
  ``BACKOFF_MAX``, or the server's ``Retry-After`` on 429/503, at most ``RETRY_AFTER_MAX``)
  between tries, ``max_retries`` retries in all. What still fails raises :class:`Failure`
  (``cause``: ``connect``, ``timeout``, ``dropped``, ``http_<status>``); any other 4xx raises
  :class:`Rejected` at once (the request itself is wrong: retrying cannot help).
- ``Client.retries`` and ``Client.failures`` count causes (thread-safe).
- :func:`redact_url` is the base URL as files may show it: no user, password, query or
  fragment. The API key is a header only and never leaves this module; :meth:`Client.scrub`
  blanks it (and a password in the URL) out of any text handed on (an error message that
  quotes it).
- A stop event ends waits at once (the caller gives up on the rest after a fatal error).
- :func:`in_flight` runs the calls, at most ``concurrency`` at a time, in daemon threads.

Not covered: streaming (SSE), HTTP/2, proxies other than httpx's environment defaults.
"""

from __future__ import annotations

import queue
import random
import threading
from collections import Counter
from typing import Any
from urllib.parse import urlsplit, urlunsplit

BACKOFF_MAX = 30.0
RETRY_AFTER_MAX = 60.0
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class Failure(Exception):
    """A request that failed for good after its retries (an infrastructure outcome)."""

    def __init__(self, cause: str, message: str):
        super().__init__(message)
        self.cause = cause


class Rejected(Exception):
    """The server refused the request itself (a 4xx other than 408/429): no retry."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def redact_url(url: str) -> str:
    """``url`` without credentials, query or fragment (what a result file may record)."""
    p = urlsplit(url)
    host = p.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    netloc = host + (f":{p.port}" if p.port else "")
    return urlunsplit((p.scheme, netloc, p.path.rstrip("/"), "", ""))


def _detail(resp: Any) -> str:
    """The first line of a server's error body (its ``error.message``/``detail`` when JSON)."""
    try:
        body = resp.json()
    except ValueError:
        text = resp.text
    else:
        err = body.get("error", body) if isinstance(body, dict) else body
        if isinstance(err, dict):
            err = err.get("message") or err.get("detail") or err
        text = str(err)
    return (text.strip().splitlines() or [""])[0][:300]


class Client:
    def __init__(self, base_url: str, *, key: str | None, concurrency: int, timeout: float,
                 max_retries: int, backoff: float):
        import httpx

        self._httpx = httpx
        self.base_url = base_url.rstrip("/")
        # what no text this client hands on may contain: the key, a password in the URL
        self._secrets = [x for x in (key, urlsplit(base_url).password) if x]
        self.max_retries, self.backoff = max_retries, backoff
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout), headers=headers,
            limits=httpx.Limits(max_connections=concurrency,
                                max_keepalive_connections=concurrency))
        self.retries: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.sent = 0
        self._lock = threading.Lock()
        self.stop = threading.Event()

    def scrub(self, text: str) -> str:
        """``text`` with the API key (and a password the URL carries) blanked out."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def get_json(self, path: str) -> Any:
        """One GET, no retry (a probe); raises ``httpx.HTTPError`` or :class:`Rejected`."""
        resp = self._http.get(self.base_url + path)
        if resp.status_code >= 400:
            raise Rejected(resp.status_code, self.scrub(_detail(resp)))
        return resp.json()

    def post_json(self, path: str, body: dict) -> dict:
        """POST ``body``; retried as the module doc says; the response's JSON object."""
        httpx = self._httpx
        attempt = 0
        while True:
            wait = None
            try:
                with self._lock:
                    self.sent += 1
                resp = self._http.post(self.base_url + path, json=body)
            except httpx.TimeoutException as e:
                cause, msg = "timeout", f"no answer within the timeout ({type(e).__name__})"
            except httpx.ConnectError as e:
                cause, msg = "connect", f"cannot connect ({e})"
            except httpx.TransportError as e:
                cause, msg = "dropped", f"connection lost ({type(e).__name__}: {e})"
            else:
                if resp.status_code < 400:
                    try:
                        data = resp.json()
                    except ValueError:
                        data = None
                    if isinstance(data, dict):
                        return data
                    cause, msg = "bad_response", "the answer is not a JSON object"
                elif resp.status_code in RETRY_STATUS:
                    cause = f"http_{resp.status_code}"
                    msg = f"HTTP {resp.status_code}: {_detail(resp)}"
                    wait = _retry_after(resp.headers.get("retry-after"))
                else:
                    raise Rejected(resp.status_code, self.scrub(
                        f"HTTP {resp.status_code}: {_detail(resp)}"))
            msg = self.scrub(msg)
            if attempt >= self.max_retries or self.stop.is_set():
                with self._lock:
                    self.failures[cause] += 1
                raise Failure(cause, f"{msg} (after {attempt + 1} tries)")
            with self._lock:
                self.retries[cause] += 1
            if wait is None:
                wait = min(BACKOFF_MAX, self.backoff * 2 ** attempt) * (0.5 + random.random())
            attempt += 1
            self.stop.wait(wait)  # backoff; returns at once when the caller gives up

    def close(self) -> None:
        self._http.close()


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header given in seconds (an HTTP date is ignored)."""
    try:
        return min(RETRY_AFTER_MAX, max(0.0, float(value))) if value else None
    except ValueError:
        return None


def in_flight(fn, items: list, concurrency: int) -> list:
    """``[fn(x) for x in items]``, at most ``concurrency`` at a time in daemon threads (a
    Ctrl-C in the caller does not wait for requests in flight); the first exception a call
    raised is raised after all have ended."""
    todo: queue.SimpleQueue = queue.SimpleQueue()
    for k in range(len(items)):
        todo.put(k)
    out: list = [None] * len(items)
    errors: list[BaseException] = []
    finished = threading.Semaphore(0)

    def worker() -> None:
        while True:
            try:
                k = todo.get_nowait()
            except queue.Empty:
                return
            try:
                out[k] = fn(items[k])
            except BaseException as e:  # noqa: BLE001 - handed to the caller below
                errors.append(e)
            finally:
                finished.release()

    for _ in range(min(concurrency, len(items))):
        threading.Thread(target=worker, daemon=True).start()
    for _ in items:
        finished.acquire()
    if errors:
        raise errors[0]
    return out
