"""Agreement with labelled model responses: this checkout, an earlier commit, math-verify 0.9.0.

    python bench/verify_math_corpus.py [--gsm8k-repo PATH] [--prm800k-repo PATH]
        [--math-verify-repo PATH] [--processbench-repo PATH --mario-repo PATH
        --qwen-math-repo PATH --omni-math-rule-repo PATH] [--skythought-repo PATH]
        [--only NAME,...] [--before 60d84a8] [--disagreements FILE.jsonl]

Sets (each a list of (response, gold, label, ref), the label saying whether the response is
right, the ref finding the row again):

- ``gsm8k-gpt3``: openai/grade-school-math ``grade_school_math/data/example_model_solutions.jsonl``
  (MIT): 1,319 GSM8K test problems, each solved by four GPT-3 models (6B/175B, fine-tuned or
  with verification), with the source's ``is_correct`` label; 5,276 responses ending in
  ``A: <answer>``. The gold is the ground truth's ``A:`` line. Read from ``PATH`` (a checkout or
  a git dir: ``git clone https://github.com/openai/grade-school-math``) at bench time.
- ``prm800k-solved``: PRM800K phase 1 (openai/prm800k, MIT): GPT-4 solutions to MATH problems
  whose steps human labellers rated, the responses they marked as finished solutions with
  every step rated right (so the label is "right": this set measures false "not equal" only).
  PRM800K's own files are Git LFS pointers in its repository, so they are read from the MIT
  copy in xhghhh/Enhancing-PRM800K (``phase1_test`` and ``phase1_train_plus``
  ``.stepwise-critic.parquet``, commit df7f9ba; steps joined by newlines, the ``# Answer``
  step is not in that copy): ``--prm800k-repo`` is its git dir (``git clone
  https://github.com/xhghhh/Enhancing-PRM800K``; the files were removed from its HEAD).
- ``prm800k-shifted``, ``gsm8k-shifted``: the same responses, each against another
  problem's gold (label: wrong; see :func:`shifted`): false "equal" by accident.
- ``mv-long``: math-verify's own long cases (model responses; see ``math_verify_cases.py``),
  when ``--math-verify-repo`` is given.
- ``formats``: the format families of ``tests/verifiers/math/test_math_formats.py`` (written
  shapes).
- ``processbench-{gsm8k,math,olympiadbench,omnimath}``: 3,035 solutions of 12 open instruct
  models with the source's final-answer label, golds joined from four repositories (each split
  needs its gold repo: ``--gsm8k-repo``, ``--mario-repo``, ``--qwen-math-repo``,
  ``--omni-math-rule-repo``); ``skythought-chat`` / ``skythought-long``: SkyThought's saved
  Qwen2.5-Math-harness outputs (instruct models; Sky-T1 long reasoning), labelled by that
  harness's grader. Sources, commits, licenses: ``math_corpora.py``.

``--speed``: also the time of extraction alone (``find_answer``), ours vs ``--before``'s, in
this process, on verify_math.py's boxed responses and on each set here.

For each set and judge: agreement with the labels, false "equal" (a wrong response passed),
false "not equal" (a right one failed). ``--before REV`` judges with the verifier of commit
``REV`` too, extracted with ``git archive`` into a temporary folder and run in a subprocess
(its own imports, nothing patched). Ours runs as the CLI default (``MathVerifier()``).
math-verify gets ``verify(parse(gold), parse(response))``, the gold wrapped in ``$..$`` when it
has no delimiter. ``--disagreements FILE`` writes one JSON line for every pair where ours and
math-verify differ or ours differs from the label: set, ref, gold, label, both verdicts (ours
with its extracted answer, ``answer_from`` and ``rule``; math-verify with what it parsed) and
the response's last 800 characters.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import math_corpora  # the bench folder is not a package: found through sys.path
from math_corpora import Pair, read

GSM8K_FILE = "grade_school_math/data/example_model_solutions.jsonl"
MODELS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")


def gsm8k_gpt3(repo: str) -> list[Pair]:
    out = []
    for i, line in enumerate(read(repo, GSM8K_FILE).splitlines()):
        row = json.loads(line)
        gold = row["ground_truth"].rsplit("A:", 1)[1].strip()
        out += [(row[m]["solution"], gold, bool(row[m]["is_correct"]), f"gsm8k/{i} {m}")
                for m in MODELS]
    return out


PRM800K_REV = "df7f9ba"
PRM800K_FILES = ("phase1_test.stepwise-critic.parquet", "phase1_train_plus.stepwise-critic.parquet")


def prm800k_solved(repo: str) -> list[Pair]:
    import io

    import pyarrow.parquet as pq
    out = []
    for name in PRM800K_FILES:
        blob = subprocess.run(["git", f"--git-dir={repo}", "show", f"{PRM800K_REV}:{name}"],
                              capture_output=True, check=True).stdout
        for i, r in enumerate(pq.read_table(io.BytesIO(blob)).to_pylist()):
            if r["is_solution"] and r["rating"] == 1 and r["answer"]:
                out.append(("\n".join([*r["responses"], r["next_response"]]), r["answer"], True,
                            f"prm800k/{name.split('.')[0]}#{i}"))
    return out


def shifted(pairs: list, step: int = 7) -> list[Pair]:
    """Each response against another problem's gold (label: wrong): a precision check. A
    response that passes here passed by accident (a list of candidates, a stray number).
    Pairs whose two golds read the same (spaces, ``$`` and a trailing ``.0`` aside) are
    left out."""
    def key(g: str) -> str:
        g = g.replace(" ", "").replace("$", "")
        return g.removesuffix(".0")
    n = len(pairs)
    out = [(pairs[i][0], pairs[(i + step) % n][1], False,
            f"{pairs[i][3]} vs gold of {pairs[(i + step) % n][3]}") for i in range(n)]
    return [p for i, p in enumerate(out) if key(p[1]) != key(pairs[i][1])]


def formats() -> list[Pair]:
    sys.path.insert(0, str(ROOT / "tests" / "verifiers" / "math"))
    from test_math_formats import FORMATS
    return [(text, gold, passed, f"formats/{fam}#{i}") for fam, rows in FORMATS.items()
            for i, (text, gold, passed, _) in enumerate(rows)]


def mv_long(repo: str) -> list[Pair]:
    from math_verify_cases import load_cases
    return [(c.pred, c.gold, c.expected, c.where) for c in load_cases(repo) if not c.short]


def ours_verdicts(pairs: list) -> list:
    from dapo_bench.verifiers.math import MathVerifier
    with MathVerifier(workers=1) as v:
        return v.verify_batch([p[0] for p in pairs], [p[1] for p in pairs])


def ours(pairs: list) -> list[bool]:
    return [x.passed for x in ours_verdicts(pairs)]


def math_verify_verdicts(pairs: list) -> list[tuple[bool, str]]:
    """math-verify's verdict and what it parsed from the response, for each pair."""
    import logging

    from math_verify import parse, verify
    logging.disable(logging.CRITICAL)
    out = []
    for pred, gold, *_ in pairs:
        g = gold if ("$" in gold or "\\boxed" in gold) else f"${gold}$"
        try:
            parsed = parse(pred)
            out.append((bool(verify(parse(g), parsed)), str(parsed[-1]) if parsed else ""))
        except Exception as e:  # noqa: BLE001 - a crash is a "not equal", as math-verify's own default
            out.append((False, f"error: {type(e).__name__}"))
    return out


def checkout(rev: str, dest: str) -> None:
    """Commit *rev*'s package, as an importable tree in *dest* (``PYTHONPATH=dest`` and
    ``cwd=dest``: its own imports, the installed package's path finder comes after)."""
    arch = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "dapo_bench", "verifiers",
                           "tasks"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=arch, check=True)
    os.symlink("../verifiers", Path(dest, "dapo_bench", "verifiers"))
    os.symlink("../tasks", Path(dest, "dapo_bench", "task_specs"))


def before(rev: str, sets: dict) -> dict[str, list[bool]]:
    """Verdicts of commit *rev*'s verifier, in a subprocess importing only that tree."""
    with tempfile.TemporaryDirectory() as tmp:
        checkout(rev, tmp)
        src = Path(tmp, "pairs.json")
        src.write_text(json.dumps(sets))
        env = {**os.environ, "PYTHONPATH": tmp}
        bench = str(ROOT / "bench")
        code = (f"import json, sys; sys.path.insert(0, {bench!r}); "
                "from verify_math_corpus import ours; "
                f"sets = json.load(open({str(src)!r})); "
                "print(json.dumps({k: ours(v) for k, v in sets.items()}))")
        res = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp, capture_output=True,
                             text=True, check=True)
        return json.loads(res.stdout.strip().splitlines()[-1])


def extract_speed(rev: str, sets: dict) -> None:
    """``find_answer`` per response, this checkout vs commit *rev*'s ``extract.py`` (loaded in
    this process beside ours, on this checkout's helper modules), best of 7, same run."""
    import importlib.util
    import random
    import time

    from dapo_bench.verifiers.math import extract as new
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:verifiers/math/extract.py"],
                         capture_output=True, text=True, check=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "extract_before.py")
        path.write_text(src)
        spec = importlib.util.spec_from_file_location("dapo_bench.verifiers.math._before", path)
        old = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(old)
    sys.path.insert(0, str(ROOT / "bench"))
    import math_pairs
    texts = {"boxed (verify_math mixed)": [p for _, p, _ in
                                           math_pairs.pairs_mixed(random.Random(0), 600)]}
    texts.update({k: [p[0] for p in v] for k, v in sets.items() if k != "formats"})
    for name, items in texts.items():
        best = {}
        for label, mod in ((rev, old), ("ours", new)):
            runs = []
            for _ in range(7):
                t0 = time.perf_counter()
                for t in items:
                    mod.find_answer(t)
                runs.append(time.perf_counter() - t0)
            best[label] = min(runs) / len(items) * 1e6
        print(f"extraction {name}: {len(items)} responses, {rev} {best[rev]:.1f} us, ours "
              f"{best['ours']:.1f} us, ratio ours/{rev} {best['ours'] / best[rev]:.2f}")


def score(passed: list[bool], labels: list[bool]) -> dict:
    agree = sum(p == lab for p, lab in zip(passed, labels))
    return {"agree": agree, "n": len(labels),
            "false_eq": sum(p and not lab for p, lab in zip(passed, labels)),
            "false_ne": sum(lab and not p for p, lab in zip(passed, labels))}


def load_sets(args, names: list[str] | None = None) -> dict[str, list[Pair]]:
    """The sets whose repositories *args* names (all of them, or those in *names*), in order."""
    a, pb = args, math_corpora.PROCESSBENCH_SPLITS
    makers = {"formats": formats}
    if a.gsm8k_repo:
        makers["gsm8k-gpt3"] = lambda: gsm8k_gpt3(a.gsm8k_repo)
    if a.prm800k_repo:
        makers["prm800k-solved"] = lambda: prm800k_solved(a.prm800k_repo)
        makers["prm800k-shifted"] = lambda: shifted(prm800k_solved(a.prm800k_repo))
    if a.gsm8k_repo:
        makers["gsm8k-shifted"] = lambda: shifted(gsm8k_gpt3(a.gsm8k_repo)[::4], step=1)
    if a.math_verify_repo:
        makers["mv-long"] = lambda: mv_long(a.math_verify_repo)
    if a.processbench_repo:
        repos = dict(zip(pb, (a.gsm8k_repo, a.mario_repo, a.qwen_math_repo,
                              a.omni_math_rule_repo)))
        golds = functools.cache(lambda: math_corpora.processbench_golds(*repos.values()))
        for split, gold_repo in repos.items():
            if gold_repo:
                makers[f"processbench-{split}"] = lambda s=split: math_corpora.processbench(
                    a.processbench_repo, s, golds()[s])
            else:
                print(f"processbench-{split}: skipped (its gold repository was not given)")
    if a.skythought_repo:
        makers["skythought-chat"] = lambda: math_corpora.skythought(a.skythought_repo, False)
        makers["skythought-long"] = lambda: math_corpora.skythought(a.skythought_repo, True)
    return {k: make() for k, make in makers.items() if names is None or k in names}


def disagreement(name: str, pair: Pair, v, mv: tuple[bool, str]) -> dict:
    return {"set": name, "ref": pair[3], "gold": pair[1], "label": pair[2],
            "ours": {"passed": v.passed, "reason": v.reason, "extracted": v.extracted,
                     **v.details},
            "mv": {"passed": mv[0], "parsed": mv[1]}, "chars": len(pair[0]),
            "tail": pair[0][-800:]}


def add_corpus_args(ap: argparse.ArgumentParser) -> None:
    """The repository flags of the sets (also verify_math.py's, for its real-response sets)."""
    ap.add_argument("--gsm8k-repo", help="openai/grade-school-math checkout or git dir")
    ap.add_argument("--math-verify-repo", help="Math-Verify checkout or git dir (its tests)")
    ap.add_argument("--prm800k-repo", help="xhghhh/Enhancing-PRM800K git dir (PRM800K phase 1)")
    ap.add_argument("--processbench-repo", help="QwenLM/ProcessBench git dir (commit ee5ae00)")
    ap.add_argument("--mario-repo", help="MARIO-Math-Reasoning/MARIO_EVAL (MATH golds)")
    ap.add_argument("--qwen-math-repo", help="QwenLM/Qwen2.5-Math (OlympiadBench golds)")
    ap.add_argument("--omni-math-rule-repo", help="KbsdJames/omni-math-rule (Omni-MATH golds)")
    ap.add_argument("--skythought-repo", help="NovaSky-AI/SkyThought git dir (commit 9a750c7)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_corpus_args(ap)
    ap.add_argument("--only", help="comma-separated set names to run (default: all loaded)")
    ap.add_argument("--before", default="60d84a8", help="earlier commit to compare ('' = none)")
    ap.add_argument("--speed", action="store_true", help="also time find_answer vs --before")
    ap.add_argument("--disagreements", help="write the pairs judged differently here (JSONL)")
    args = ap.parse_args()
    sets = load_sets(args, args.only.split(",") if args.only else None)
    old = before(args.before, sets) if args.before else {}
    rows = []
    print("| set | pairs (right) | judge | agreement | false \"equal\" | false \"not equal\" |")
    print("|---|---|---|---|---|---|")
    for name, pairs in sets.items():
        labels = [p[2] for p in pairs]
        verdicts, mv = ours_verdicts(pairs), math_verify_verdicts(pairs)
        judges = {"ours": [v.passed for v in verdicts]}
        if name in old:
            judges[f"ours @ {args.before}"] = old[name]
        judges["math-verify 0.9.0"] = [ok for ok, _ in mv]
        for judge, passed in judges.items():
            s = score(passed, labels)
            print(f"| {name} | {s['n']} ({sum(labels)}) | {judge} | {s['agree']}/{s['n']} "
                  f"({100 * s['agree'] / s['n']:.1f}%) | {s['false_eq']} | {s['false_ne']} |",
                  flush=True)
        rows += [disagreement(name, p, v, m) for p, v, m in zip(pairs, verdicts, mv)
                 if v.passed != m[0] or v.passed != p[2]]
    if args.disagreements:
        with open(args.disagreements, "w") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        print(f"{len(rows)} disagreements written to {args.disagreements}")
    if args.speed and args.before:
        extract_speed(args.before, sets)


if __name__ == "__main__":
    main()
