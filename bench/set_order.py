"""How often a set crosses the code sandbox's proxy iterating in its sender's order: ours
(`values.ordered_set`) vs the peer, a plain ``set(items)`` rebuilt in the sent order (what the
transport did before). Random sets of ints and str, built three ways (a literal, ``set(list)``,
``set(dict)``), by size.

    python bench/set_order.py [--n 6000] [--seed 7]
"""

from __future__ import annotations

import argparse
import random

from dapo_bench.verifiers.code.values import ordered_set


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    for lo, hi in ((1, 10), (10, 30), (30, 60)):
        peer = ours = 0
        for t in range(args.n):
            pool = [rng.choice([rng.randrange(1000), rng.randrange(-50, 50),
                                str(rng.randrange(100))]) for _ in range(rng.randrange(lo, hi))]
            k = t % 3
            s = (eval("{" + ",".join(map(repr, pool)) + "}") if k == 0
                 else set(pool) if k == 1 else set(dict.fromkeys(pool)))
            order = list(s)
            peer += list(set(order)) == order
            ours += list(ordered_set(order)) == order
        print(f"{lo:2d}-{hi - 1:2d} items: order kept: ours {ours / args.n:.1%}, "
              f"set(items) {peer / args.n:.1%}, ratio {ours / max(peer, 1):.2f}")


if __name__ == "__main__":
    main()
