"""Degenerate responses (tests/degenerate.py) of 1K to 1M characters: ours vs math-verify.

    nice -n 5 python bench/verify_math_degenerate.py [--sizes 1000,10000,100000,1000000]
        [--peer-max 100000] [--repeat 3]

For each shape and size: the wall time of one in-process ``verify(response, "42")`` (ours:
``dapo_bench.verifiers.math.verify``, default 5 s deadline; best of ``--repeat``), its verdict,
and the growth exponent between the two largest sizes (``log(t2/t1) / log(n2/n1)``: 1 is
linear). math-verify 0.9.0 (``verify(parse("$42$"), parse(response))``, its own default
timeouts) runs on the same responses up to ``--peer-max`` characters, once each. The slowest
shape at 100K and the largest exponent are printed last (issue 42: at most 0.2 s at 100K, at
most linear to 1M).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from degenerate import SHAPES


def _ours(text: str, repeat: int) -> tuple[float, str]:
    from dapo_bench.verifiers.math import verify

    best, reason = math.inf, ""
    for _ in range(repeat):
        t0 = time.perf_counter()
        v = verify(text, "42")
        best, reason = min(best, time.perf_counter() - t0), v.reason
    return best, reason


def _peer(text: str) -> tuple[float, str]:
    import logging

    from math_verify import parse, verify
    logging.disable(logging.CRITICAL)
    t0 = time.perf_counter()
    try:
        ok = verify(parse("$42$"), parse(text))
        why = "ok" if ok else "not equal"
    except Exception as e:  # noqa: BLE001 - math-verify's own failure is its verdict here
        why = type(e).__name__
    return time.perf_counter() - t0, why


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--peer-max", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    from dapo_bench.verifiers.math import verify
    verify("\\boxed{1}", "1")  # imports and the first worker: not charged to a shape
    head = " ".join(f"{n:>10,}" for n in sizes)
    print(f"{'shape':18s} {head}  exponent  verdict at {sizes[-1]:,}  | math-verify (s)")
    worst_100k, worst_exp = (0.0, ""), (0.0, "")
    for name, make in SHAPES.items():
        times, reason = [], ""
        for n in sizes:
            t, reason = _ours(make(n), args.repeat)
            times.append(t)
        exp = (math.log(max(times[-1], 1e-6) / max(times[-2], 1e-6)) /
               math.log(sizes[-1] / sizes[-2])) if len(sizes) > 1 else 0.0
        if 100_000 in sizes:
            worst_100k = max(worst_100k, (times[sizes.index(100_000)], name))
        if times[-1] > 0.01:  # below 10 ms the exponent is noise
            worst_exp = max(worst_exp, (exp, name))
        peer = [f"{_peer(make(n))[0]:.3f}" for n in sizes if n <= args.peer_max]
        cells = " ".join(f"{t:10.4f}" for t in times)
        print(f"{name:18s} {cells}  {exp:8.2f}  {reason:18s} | {' '.join(peer)}", flush=True)
    print(f"slowest at 100K: {worst_100k[1]} {worst_100k[0]:.3f} s; largest exponent "
          f"(shapes over 10 ms): {worst_exp[1]} {worst_exp[0]:.2f}")


if __name__ == "__main__":
    main()
