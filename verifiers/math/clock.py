"""The per-item deadline in the calling thread: the whole verification answers within it.

The fast path of the math verifier (extraction, cleaning, the sympy-free comparison) runs in
the caller's thread. Its loops are linear in what they read, and the long ones call
:func:`check` as they go, so a response of any size or shape stops at its deadline: ``with
limit(t):`` sets the deadline (a ``time.perf_counter()`` value) for this thread, and
:class:`OutOfTime` ends the reading; the verdict is then ``timeout``, an infrastructure
outcome, never a 0. The sympy part runs in a worker process that is killed at the time left
(``pool.py``). Pure Python; each check costs about 0.1 us, made every few hundred steps.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

EVERY = 256  # loop steps between two checks in the scanning loops (each step well under 10 us)


class OutOfTime(Exception):
    """The item's deadline passed while it was being read."""


_LOCAL = threading.local()


@contextmanager
def limit(deadline: float) -> Iterator[None]:
    """Stop this thread's reading at ``deadline`` (``time.perf_counter()`` seconds); nested
    limits keep the earlier one."""
    outer = getattr(_LOCAL, "at", None)
    _LOCAL.at = deadline if outer is None else min(outer, deadline)
    try:
        yield
    finally:
        _LOCAL.at = outer


def check() -> None:
    """Raise :class:`OutOfTime` when this thread's deadline has passed (no deadline: never)."""
    at = getattr(_LOCAL, "at", None)
    if at is not None and time.perf_counter() > at:
        raise OutOfTime


def ticks(items):
    """*items*, checking the deadline every :data:`EVERY` of them (for a scanning loop)."""
    for k, x in enumerate(items):
        if not k % EVERY:
            check()
        yield x
