"""Ours vs math-verify 0.9.0 on the same generated answer pairs, in one process, one run.

    nice -n 5 python bench/verify_math.py [--pairs 600] [--seed 0]

Two sets, each half positive and half negative (every negative is a near miss):
- mixed: integers, decimals vs fractions, fractions, roots, tuples, intervals, sets,
  polynomials, equations, boxed full solutions (a paragraph of reasoning, then a box);
- simple: integers and decimals only.

Each pair is a full model-style response (the answer in ``\\boxed{}``) and a bare gold. Both
verifiers see the same text: ours ``verify(response, gold)``, math-verify
``verify(parse("$" + gold + "$"), parse(response))``. Every pair has its own gold, so our
parse cache does not help here (the RL case, many predictions per gold, is the ``--rl`` set).
Single process each: ours with ``workers=1`` (one sympy worker used sequentially), math-verify
in this process; both get the same untimed warm-up (``worker.WARM_UP``: imports and the LaTeX
parser's lazily built tables). Prints pairs/s, the ratio, the agreement between the two, and each one's
false "equal" verdicts on the negatives and misses on the positives; then our batch
throughput with the process pool over all cores.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from fractions import Fraction


def _pairs_mixed(rng: random.Random, n: int) -> list[tuple[str, str, bool]]:
    out = []
    makers = [_integer, _dec_frac, _fraction, _root, _tuple, _interval, _set, _poly, _equation,
              _solution]
    for i in range(n):
        gold, right, wrong = makers[i % len(makers)](rng)
        ok = i % 2 == 0
        out.append((gold, _respond(rng, right if ok else wrong), ok))
    return out


def _pairs_simple(rng: random.Random, n: int) -> list[tuple[str, str, bool]]:
    out = []
    for i in range(n):
        gold, right, wrong = (_integer if i % 4 < 2 else _decimal)(rng)
        ok = i % 2 == 0
        out.append((gold, _respond(rng, right if ok else wrong), ok))
    return out


def _respond(rng: random.Random, ans: str) -> str:
    a, b = rng.randint(2, 99), rng.randint(2, 99)
    return (f"We compute ${a} + {b} = {a + b}$ first. Then, simplifying, the result follows.\n"
            f"Therefore the final answer is $\\boxed{{{ans}}}$.")


def _integer(rng):
    v = rng.randint(-999, 9999)
    return str(v), str(v), str(v + rng.choice([-1, 1, 10]))


def _decimal(rng):
    v = Fraction(rng.randint(1, 9999), 100)
    return f"{float(v):.2f}", f"{float(v):.2f}0", f"{float(v) + 0.01:.2f}"


def _dec_frac(rng):
    q = rng.choice([2, 4, 5, 8, 16, 20, 25])
    p = rng.randint(1, 4 * q)
    v = Fraction(p, q)
    return rf"\frac{{{v.numerator}}}{{{v.denominator}}}", str(float(v)), str(float(v) + 0.01)


def _fraction(rng):
    p, q, k = rng.randint(1, 50), rng.randint(2, 50), rng.randint(2, 5)
    v = Fraction(p, q)
    return (rf"\frac{{{v.numerator}}}{{{v.denominator}}}",
            rf"\frac{{{k * v.numerator}}}{{{k * v.denominator}}}",
            rf"\frac{{{v.numerator + 1}}}{{{v.denominator}}}")


def _root(rng):
    a, b = rng.randint(2, 9), rng.choice([2, 3, 5, 6, 7, 10, 11])
    return rf"{a}\sqrt{{{b}}}", rf"\sqrt{{{a * a * b}}}", rf"\sqrt{{{a * a * b + 1}}}"


def _tuple(rng):
    a, b = rng.randint(-20, 20), rng.randint(21, 40)
    return f"({a},{b})", rf"\left( {a}, {b} \right)", f"({b},{a})"


def _interval(rng):
    a, b = rng.randint(-20, 0), rng.randint(1, 20)
    return f"[{a},{b})", rf"\left[{a}, {b}\right)", f"({a},{b})"


def _set(rng):
    xs = rng.sample(range(1, 30), 3)
    return (r"\{" + ",".join(map(str, xs)) + r"\}", r"\{" + ",".join(map(str, xs[::-1])) + r"\}",
            r"\{" + ",".join(map(str, xs[:2])) + r"\}")


def _poly(rng):
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    return (f"(x+{a})(x+{b})", f"x^2+{a + b}x+{a * b}", f"x^2+{a + b}x+{a * b + 1}")


def _equation(rng):
    a = rng.randint(2, 50)
    return f"x={a}", str(a), str(a + 1)


def _solution(rng):
    a, b = rng.randint(2, 30), rng.choice([2, 3, 5, 7])
    return (rf"\frac{{\sqrt{{{b}}}}}{{{a}}}", rf"\frac{{1}}{{{a}}}\sqrt{{{b}}}",
            rf"\frac{{\sqrt{{{b}}}}}{{{a + 1}}}")


def _run_ours(pairs, workers: int):
    from dapo_bench.verifiers.math import MathVerifier
    from dapo_bench.verifiers.math.check import prepare

    prepare.cache_clear()
    with MathVerifier(workers=workers) as mv:
        mv.warm()  # worker start-up, not timed
        prepare.cache_clear()
        t0 = time.perf_counter()
        if workers == 1:
            res = [mv.verify(r, g).passed for g, r, _ in pairs]
        else:
            res = [v.passed for v in mv.verify_batch([r for _, r, _ in pairs],
                                                     [g for g, _, _ in pairs])]
        return res, time.perf_counter() - t0


def _run_math_verify(pairs):
    from dapo_bench.verifiers.math.worker import WARM_UP
    from math_verify import parse, verify

    for g, r in WARM_UP:  # the same parser warm-up our workers do at start, not timed
        verify(parse(f"${g}$"), parse(f"${r}$"))
    t0 = time.perf_counter()
    res = [bool(verify(parse(f"${g}$"), parse(r))) for g, r, _ in pairs]
    return res, time.perf_counter() - t0


def _report(name: str, pairs, ours, t_ours, peer, t_peer) -> None:
    n = len(pairs)
    exp = [e for *_, e in pairs]
    agree = sum(a == b for a, b in zip(ours, peer)) / n

    def errs(res):
        false_eq = sum(r and not e for r, e in zip(res, exp))
        miss = sum(e and not r for r, e in zip(res, exp))
        return false_eq, miss

    print(f"[{name}] {n} pairs ({sum(exp)} positive, {n - sum(exp)} negative)")
    for label, res, t in (("ours", ours, t_ours), ("math-verify 0.9.0", peer, t_peer)):
        fe, miss = errs(res)
        print(f"  {label:18s} {n / t:8.1f} pairs/s  ({t:6.2f} s)  false-equal {fe:3d}  "
              f"missed {miss:3d}")
    print(f"  ratio ours/math-verify: {t_peer / t_ours:.1f}x   agreement: {agree:.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=600)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sets = {"mixed": _pairs_mixed(rng, args.pairs), "simple": _pairs_simple(rng, args.pairs)}
    print(f"machine: {os.cpu_count()} cores (shared; ratios are from the same run)")
    for name, pairs in sets.items():
        ours, t_ours = _run_ours(pairs, workers=1)
        peer, t_peer = _run_math_verify(pairs)
        _report(name, pairs, ours, t_ours, peer, t_peer)
    workers = os.cpu_count() or 1
    pool_res, t_pool = _run_ours(sets["mixed"], workers=workers)
    print(f"[mixed, batch] ours verify_batch with {workers} workers: "
          f"{len(pool_res) / t_pool:.1f} pairs/s ({t_pool:.2f} s); same verdicts as "
          f"single: {pool_res == _run_ours(sets['mixed'], workers=1)[0]}")
    gold = r"\frac{\sqrt{3}}{2}"
    rl = [(gold, _respond(rng, rng.choice([r"\frac{1}{2}\sqrt{3}", "0.866", r"\sqrt{3}/2",
                                           r"\frac{\sqrt{2}}{2}", "0.87"])), True)
          for _ in range(200)]
    ours, t_ours = _run_ours(rl, workers=1)
    peer, t_peer = _run_math_verify(rl)
    print(f"[rl: 200 predictions (5 forms, 2 of them rounded decimals), one gold] ours {len(rl) / t_ours:.1f} pairs/s, math-verify "
          f"{len(rl) / t_peer:.1f} pairs/s, ratio {t_peer / t_ours:.1f}x, agreement "
          f"{sum(a == b for a, b in zip(ours, peer)) / len(rl):.1%}")


if __name__ == "__main__":
    main()
