"""A math worker process: ``python -m dapo_bench.verifiers.math.worker FD [warm]``.

The worker's side of the protocol in ``pool.py`` (the pool, which the package imports):
answer ``(op, args)`` messages on the socket FD until it closes. Kept apart from the pool so
that the worker may import the verifier (its ``"fast"`` op) while the verifier imports the
pool, with no import circle, and so that ``-m`` does not re-import an imported module.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

# Pairs a worker started by WorkerPool.warm() checks before it reports ready: the ANTLR LaTeX
# parser builds its lookahead tables lazily, so the first parses of each kind are 10-20x slower
# (values outside verifiers/math/latex.py's shapes still reach it).
WARM_UP = (
    (r"\frac{\sqrt{3}}{2}", r"\sqrt{3}/2"), ("x^2+2x+1", "(x+1)^{2}"), ("y=2x+1", "2x+1-y=0"),
    (r"\sin(x)+\ln|x|+C", r"\ln \left|x\right|+\sin x+C"), ("2i+1", r"1+\sqrt{-1}"),
    (r"\pi r^2", r"r^{2}\pi"), (r"1.5\times10^{-3}", r"\frac{3}{2000}"), ("x \\leq 3", "3 \\geq x"),
    (r"\begin{pmatrix}a\\b\end{pmatrix}", r"\begin{pmatrix}b\\a\end{pmatrix}"),
    ("f(x)", "f(y)"), ("-x > -1", "x < 1"), (r"\sum_{k=0}^{n-1} F_k", r"\sum_{k=0}^{n} F_k"),
    (r"\sqrt[3]{x}^2", "x^{2/3}"),
)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)  # the parent is gone: do not outlive it, even inside a long sympy call


def serve(fd: int, warm: bool = False) -> None:
    """The worker's loop: answer (op, args) messages on fd until the socket closes."""
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    conn = Connection(fd)
    from dapo_bench.verifiers.math import symbolic  # warm import (sympy; latex2sympy on need)
    from dapo_bench.verifiers.math.item import fast_many

    ops: dict[str, Callable[..., Any]] = {"compare": symbolic.full_compare, "fast": fast_many,
                                          "ping": lambda: "pong"}
    for g, p in WARM_UP if warm else ():  # the parser's tables, before the first real call
        symbolic.full_compare(g, p)
        symbolic.equal(symbolic.to_sympy(g), symbolic.to_sympy(p))  # also those exact.py decides
        for text in (g, p):  # the ANTLR parser too, which latex.py's shapes never reach
            try:
                symbolic.antlr_parser()(text)
            except Exception:  # noqa: BLE001, S110  (warming only)
                pass
    conn.send("ready")
    while True:
        try:
            op, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            out = ("ok", ops[op](*args))
        except Exception as e:  # noqa: BLE001  (reported to the caller as WorkerError)
            out = ("error", f"{type(e).__name__}: {e}")
        conn.send(out)


if __name__ == "__main__":
    serve(int(sys.argv[1]), warm=sys.argv[2:] == ["warm"])
