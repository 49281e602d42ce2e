"""Waiting in a test for a condition the test cannot be told of (a process the kernel reaps, a
pool that notices a dead worker): poll it every 20 ms, fail with what was awaited past a bound."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(cond: Callable[[], object], what: str, limit: float = 30.0) -> None:
    """Return once ``cond()`` is true; an AssertionError naming ``what`` after ``limit`` s."""
    deadline = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)
