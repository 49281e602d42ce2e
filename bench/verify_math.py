"""Ours vs math-verify 0.9.0 on the same pairs, in one process, one run.

    nice -n 5 python bench/verify_math.py --math-verify-repo PATH [--pairs 600] [--seed 0]
        [--skythought-repo PATH] [--processbench-repo PATH --gsm8k-repo PATH ...]
        [--real SET,...] [--real-only] [--profile] [--real-rev REV]

``PATH`` is a Math-Verify checkout or git dir (``git clone https://github.com/huggingface/
Math-Verify``); its regression cases are read from its ``tests/`` now, at bench time (see
``math_verify_cases.py``), never stored here. Sets, each run by both verifiers back to back:

- ``mv-short`` / ``mv-long``: math-verify's own cases (gold, prediction, expected), split at
  200 characters (220 short answers, 49 long responses). Ours runs as the CLI default
  (``MathVerifier()``: no flag, no option); math-verify runs with the options its own test
  passes (extraction targets, precision, strict, allow_set_relation_comp).
- ``competition``: the 71 competition-shape pairs of
  ``tests/verifiers/math/test_math_competition.py``; math-verify gets ``parse(gold)``
  (``$gold$`` when the gold has no delimiter) and ``parse(prediction)``.
- ``mixed``: generated near-miss pairs, half positive: integers, decimals vs fractions,
  fractions, roots, tuples, intervals, sets, polynomials, equations, boxed full solutions;
  ``simple``: integers and decimals only. Each is a full response with the answer in
  ``\\boxed{}``; math-verify gets ``parse("$" + gold + "$")``. Every pair has its own gold,
  so our parse cache does not help (the RL case, many predictions per gold, is ``rl``).
- real responses (``--real``, with the repository flags of ``verify_math_corpus.py``): the
  long-reasoning set ``skythought-long`` and the instruct sets ``processbench-*``,
  ``skythought-chat`` (``math_corpora.py`` says what they are), each timed as whole processes,
  the CLI with one worker against a math-verify process, CPU seconds and wall, one run, the
  ratio printed (``verify_math_real.py``); ``--profile`` splits our time on each, and
  ``--real-rev REV`` times (and profiles) commit REV's CLI beside ours.

Single process each: ours with ``workers=1`` (one sympy worker used sequentially), math-verify
in this process; both get the same untimed warm-up (``worker.WARM_UP``). Per set: right (vs
the expected verdict), false "equal", agreement between the two, ours-equal where
math-verify says unequal, pairs/s and the speed ratio; then a markdown table of it all.
"""

from __future__ import annotations

import argparse
import os
import random
import time

import math_pairs
import verify_math_real
from verify_math_real import MV_CLI, dollar


def _run_ours(pairs, workers: int):
    """Our verdicts on (gold, prediction, expected) triples, and the seconds they took."""
    from dapo_bench.verifiers.math import MathVerifier
    from dapo_bench.verifiers.math.check import prepare
    from dapo_bench.verifiers.math.extract import gold_answer

    with MathVerifier(workers=workers) as mv:
        mv.warm()  # worker start-up, not timed
        prepare.cache_clear()
        gold_answer.cache_clear()
        t0 = time.perf_counter()
        if workers == 1:
            res = [mv.verify(r, g).passed for g, r, _ in pairs]
        else:
            res = [v.passed for v in mv.verify_batch([r for _, r, _ in pairs],
                                                     [g for g, _, _ in pairs])]
        return res, time.perf_counter() - t0


def _warm_math_verify():
    from dapo_bench.verifiers.math.worker import WARM_UP
    from math_verify import parse, verify

    for g, r in WARM_UP:  # the same parser warm-up our workers do at start, not timed
        verify(parse(f"${g}$"), parse(f"${r}$"))


def _run_math_verify(pairs, judge=None):
    """math-verify's verdicts: ``judge(i)`` for case sets with their own options, else
    ``verify(parse(gold), parse(prediction))``."""
    from math_verify import parse, verify

    _warm_math_verify()
    t0 = time.perf_counter()
    if judge is not None:
        res = [judge(i) for i in range(len(pairs))]
    else:
        res = [bool(verify(parse(dollar(g)), parse(r))) for g, r, _ in pairs]
    return res, time.perf_counter() - t0


def _row(name: str, pairs, ours, t_ours, peer, t_peer) -> dict:
    exp = [e for *_, e in pairs]
    n = len(pairs)

    def score(res):
        return (sum(r == e for r, e in zip(res, exp)), sum(r and not e for r, e in zip(res, exp)))

    (ro, fo), (rp, fp) = score(ours), score(peer)
    row = {"set": name, "n": n, "ours_right": ro, "ours_false_equal": fo, "mv_right": rp,
           "mv_false_equal": fp, "agree": sum(a == b for a, b in zip(ours, peer)),
           "ours_eq_mv_neq": sum(a and not b for a, b in zip(ours, peer)),
           "ours_pps": n / t_ours, "mv_pps": n / t_peer, "ratio": t_peer / t_ours}
    print(f"[{name}] {n} pairs ({sum(exp)} expected equal)\n"
          f"  ours              {ro:4d}/{n} right  false-equal {fo:3d}  {row['ours_pps']:8.1f} "
          f"pairs/s\n"
          f"  math-verify 0.9.0 {rp:4d}/{n} right  false-equal {fp:3d}  {row['mv_pps']:8.1f} "
          f"pairs/s\n"
          f"  agreement {row['agree']}/{n} ({row['agree'] / n:.1%}); ours equal where "
          f"math-verify says unequal: {row['ours_eq_mv_neq']}; speed ratio {row['ratio']:.1f}x")
    return row


def _table(rows: list[dict]) -> None:
    verify_math_real.markdown(
        ["set", "pairs", "ours right", 'ours false "equal"', "math-verify right", "agreement",
         "ours = where mv !=", "speed ours/mv"],
        [[r["set"], r["n"], f"{r['ours_right']}/{r['n']}", r["ours_false_equal"],
          f"{r['mv_right']}/{r['n']}", f"{r['agree'] / r['n']:.1%}", r["ours_eq_mv_neq"],
          f"{r['ratio']:.1f}x"] for r in rows])


def _cli_times(pairs, repeats: int = 3) -> dict:
    """Both verifiers end to end as commands: ours ``dapo-bench verify FILE --out OUT`` (the
    CLI default), math-verify a ``python -c`` loop over the same file (``parse`` +
    ``verify``). Start-up is subtracted: each also runs on the first 6 pairs (one of each
    kind), and the time per pair is (t(all) - t(6)) / (n - 6); medians of *repeats* runs,
    ours and math-verify alternating."""
    import json
    import statistics
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    work = Path(tempfile.mkdtemp(prefix="verify_math_cli_"))
    small = 6
    files = {}
    for tag, rows in (("all", pairs), ("start", pairs[:small])):
        ours_in, mv_in = work / f"ours_{tag}.jsonl", work / f"mv_{tag}.jsonl"
        ours_in.write_text("".join(json.dumps({"prediction": r, "gold": g}) + "\n"
                                   for g, r, _ in rows))
        mv_in.write_text("".join(json.dumps({"prediction": r, "gold": dollar(g)}) + "\n"
                                 for g, r, _ in rows))
        files[tag] = (ours_in, mv_in)
    cmds = {
        "ours": lambda f, o: [sys.executable, "-m", "dapo_bench.cli", "verify", str(f[0]),
                              "--out", str(o)],
        "mv": lambda f, o: [sys.executable, "-c", MV_CLI, str(f[1]), str(o)],
    }
    times = {(who, tag): [] for who in cmds for tag in files}
    for _ in range(repeats):
        for tag, f in files.items():
            for who, cmd in cmds.items():
                out = work / f"{who}_{tag}.out"
                t0 = time.perf_counter()
                subprocess.run(cmd(f, out), check=True, stderr=subprocess.DEVNULL)
                times[(who, tag)].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    ours = [json.loads(line)["passed"] for line in (work / "ours_all.out").open()]
    peer = json.loads((work / "mv_all.out").read_text())
    per = {who: (med[(who, "all")] - med[(who, "start")]) / (len(pairs) - small) for who in cmds}
    return {"ours": ours, "mv": peer, "per_pair": per, "start": {w: med[(w, "start")]
                                                                  for w in cmds},
            "ratio": per["mv"] / per["ours"]}


def _competition() -> list[tuple[str, str, bool]]:
    import importlib.util
    from pathlib import Path

    tests = Path(__file__).resolve().parents[1] / "tests"
    path = tests / "verifiers" / "math" / "test_math_competition.py"
    spec = importlib.util.spec_from_file_location("competition_pairs", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return [(g, p, e) for p, g, e in mod.PAIRS]


REAL_SETS = ("skythought-long", "processbench-gsm8k", "processbench-math",
             "processbench-olympiadbench", "processbench-omnimath", "skythought-chat")


def main() -> None:
    import logging

    from verify_math_corpus import add_corpus_args, load_sets

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_corpus_args(ap)  # --math-verify-repo and the real-response sets' repositories
    ap.add_argument("--pairs", type=int, default=600)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--real", default=",".join(REAL_SETS),
                    help="real-response sets timed as whole processes (those loaded)")
    ap.add_argument("--real-only", action="store_true", help="only the real-response sets")
    ap.add_argument("--profile", action="store_true", help="also split our time on each")
    ap.add_argument("--real-rev", help="also time this commit's CLI on the real sets")
    args = ap.parse_args()
    logging.disable(logging.WARNING)  # math-verify logs every unparsable candidate
    print(f"machine: {os.cpu_count()} cores (shared; ratios are from the same run)")
    names = args.real.split(",")
    loaded = load_sets(args, names)
    real = {k: loaded[k] for k in names if k in loaded}  # in --real's order
    if real:
        verify_math_real.run(real, args.profile, args.real_rev)
    if args.real_only:
        return
    rows = []
    if args.math_verify_repo:
        from math_verify_cases import load_cases, math_verify_verdict

        cases = load_cases(args.math_verify_repo)
        for name, sel in (("mv-short", [c for c in cases if c.short]),
                          ("mv-long", [c for c in cases if not c.short])):
            pairs = [(c.gold, c.pred, c.expected) for c in sel]
            ours, t_ours = _run_ours(pairs, workers=1)
            peer, t_peer = _run_math_verify(pairs, lambda i, sel=sel: math_verify_verdict(sel[i]))
            rows.append(_row(name, pairs, ours, t_ours, peer, t_peer))
    rng = random.Random(args.seed)
    sets = {"competition": _competition(), "mixed": math_pairs.pairs_mixed(rng, args.pairs),
            "simple": math_pairs.pairs_simple(rng, args.pairs),
            "six kinds (in process)": math_pairs.pairs_kinds(rng, args.pairs)}
    for name, pairs in sets.items():
        ours, t_ours = _run_ours(pairs, workers=1)
        peer, t_peer = _run_math_verify(pairs)
        rows.append(_row(name, pairs, ours, t_ours, peer, t_peer))
    gold = r"\frac{\sqrt{3}}{2}"
    forms = [r"\frac{1}{2}\sqrt{3}", r"\sqrt{3}/2", r"\frac{3}{2\sqrt3}", r"\frac{\sqrt{2}}{2}",
             "0.87"]
    rl = [(gold, math_pairs.respond(rng, f), i % 5 < 3) for i, f in enumerate(forms * 40)]
    ours, t_ours = _run_ours(rl, workers=1)
    peer, t_peer = _run_math_verify(rl)
    rows.append(_row("rl (200 predictions, one gold)", rl, ours, t_ours, peer, t_peer))
    workers = os.cpu_count() or 1
    pool_res, t_pool = _run_ours(sets["mixed"], workers=workers)
    print(f"[mixed, batch] ours verify_batch with {workers} workers: "
          f"{len(pool_res) / t_pool:.1f} pairs/s ({t_pool:.2f} s); same verdicts as "
          f"single: {pool_res == _run_ours(sets['mixed'], workers=1)[0]}")
    kinds = sets["six kinds (in process)"]
    cli = _cli_times(kinds)
    n = len(kinds)
    exp = [e for *_, e in kinds]
    print(f"[six kinds, through the CLI] {n} pairs; start-up subtracted (ours "
          f"{cli['start']['ours']:.2f} s, math-verify {cli['start']['mv']:.2f} s on 6 pairs): "
          f"ours {cli['per_pair']['ours'] * 1e3:.3f} ms/pair, math-verify "
          f"{cli['per_pair']['mv'] * 1e3:.3f} ms/pair; right: ours "
          f"{sum(a == b for a, b in zip(cli['ours'], exp))}/{n}, math-verify "
          f"{sum(a == b for a, b in zip(cli['mv'], exp))}/{n}; "
          f"speed ratio ours/mv {cli['ratio']:.1f}x")
    rows.append(_row("six kinds (CLI, start-up subtracted)", kinds, cli["ours"],
                     cli["per_pair"]["ours"] * n, cli["mv"], cli["per_pair"]["mv"] * n))
    _table(rows)


if __name__ == "__main__":
    main()
