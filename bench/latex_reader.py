"""verifiers/math/latex.py against latex2sympy2 on the answers of public corpora, one run.

Every answer value (a leaf after cleaning and the structure parse) of the sets of
``verify_math_corpus.py`` (the golds, and the answers extracted from the responses) is read by
both; prints how many ours reads, how many of those differ from latex2sympy2's expression
(compared node by node in argument order: must be 0), and the CPU time of each over the values
ours reads, latex2sympy2's in this fresh process (its ANTLR tables built as it goes, as in a
fresh worker). Exits 1 on any difference.

    python bench/latex_reader.py --gsm8k-repo G --math-verify-repo M --processbench-repo P \\
        --mario-repo MA --qwen-math-repo Q --omni-math-rule-repo O --skythought-repo S
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time
from pathlib import Path

import sympy

sys.path.insert(0, str(Path(__file__).parent))
from dapo_bench.verifiers.math import latex, symbolic
from dapo_bench.verifiers.math.check import prepare
from dapo_bench.verifiers.math.extract import find_answer, gold_answer
from dapo_bench.verifiers.math.structure import leaves
from verify_math_corpus import add_corpus_args, load_sets


def ordered(e) -> str:
    """The expression node by node, arguments in their stored order."""
    if isinstance(e, sympy.Basic) and e.args and not e.is_Atom:
        return f"{type(e).__name__}({','.join(ordered(a) for a in e.args)})"
    return sympy.srepr(e)


def values(sets: dict) -> list[str]:
    texts = []
    for pairs in sets.values():
        for p in pairs:
            texts.append(gold_answer(p[1]))
            found = find_answer(p[0])[0]
            if found:
                texts.append(found)
    out: set[str] = set()
    for t in texts:
        try:
            out.update(leaves(prepare(t)))
        except Exception:  # noqa: BLE001, S112  (too large: not a value either reads)
            continue
    out.discard("")
    return sorted(out)


class _Slow(Exception):
    pass


def _alarm(*_: object) -> None:
    raise _Slow


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_corpus_args(ap)
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    vals = values(load_sets(args))
    c0 = time.process_time()
    ours = {v: latex.read(v) for v in vals}
    ours_all = time.process_time() - c0
    read = [v for v in vals if ours[v] is not None]
    parse = symbolic.antlr_parser()
    signal.signal(signal.SIGALRM, _alarm)
    differ, theirs_cpu = [], 0.0
    for v in read:
        c0 = time.process_time()
        signal.alarm(10)
        try:
            ref = ordered(parse(v))
        except Exception as e:  # noqa: BLE001  (it cannot read what ours reads: a difference)
            ref = f"error: {type(e).__name__}"
        finally:
            signal.alarm(0)
        theirs_cpu += time.process_time() - c0
        if ref != ordered(ours[v]):
            differ.append((v, ordered(ours[v]), ref))
    c0 = time.process_time()
    for v in read:
        latex.read(v)
    ours_cpu = time.process_time() - c0
    print(f"{len(vals)} distinct answer values; ours reads {len(read)} "
          f"({100 * len(read) / max(len(vals), 1):.1f}%), {ours_all:.2f} CPU s for all of them")
    print(f"on the {len(read)} it reads: ours {ours_cpu:.2f} CPU s, latex2sympy2 {theirs_cpu:.2f} "
          f"CPU s in this fresh process ({theirs_cpu / max(ours_cpu, 1e-9):.1f}x); "
          f"different expressions: {len(differ)}")
    for v, a, b in differ[:20]:
        print(f"  {v!r}\n    ours: {a[:160]}\n    latex2sympy2: {b[:160]}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
