"""Agreement with labelled model responses: this checkout, an earlier commit, math-verify 0.9.0.

    python bench/verify_math_corpus.py [--gsm8k-repo PATH] [--prm800k-repo PATH]
        [--math-verify-repo PATH] [--before 60d84a8]

Sets (each a list of (response, gold, label), the label saying whether the response is right):

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
- ``formats``: the format families of ``tests/test_math_formats.py`` (written shapes).

``--speed``: also the time of extraction alone (``find_answer``), ours vs ``--before``'s, in
this process, on verify_math.py's boxed responses and on each set here.

For each set and judge: agreement with the labels, false "equal" (a wrong response passed),
false "not equal" (a right one failed). ``--before REV`` judges with the verifier of commit
``REV`` too, extracted with ``git archive`` into a temporary folder and run in a subprocess
(its own imports, nothing patched). Ours runs as the CLI default (``MathVerifier()``).
math-verify gets ``verify(parse(gold), parse(response))``, the gold wrapped in ``$..$`` when it
has no delimiter.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GSM8K_FILE = "grade_school_math/data/example_model_solutions.jsonl"
MODELS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")


def _read(repo: str, rel: str) -> str:
    p = Path(repo)
    if (p / rel).is_file():
        return (p / rel).read_text()
    return subprocess.run(["git", f"--git-dir={p}", "show", f"HEAD:{rel}"], capture_output=True,
                          text=True, check=True).stdout


def gsm8k_gpt3(repo: str) -> list[tuple[str, str, bool]]:
    out = []
    for line in _read(repo, GSM8K_FILE).splitlines():
        row = json.loads(line)
        gold = row["ground_truth"].rsplit("A:", 1)[1].strip()
        out += [(row[m]["solution"], gold, bool(row[m]["is_correct"])) for m in MODELS]
    return out


PRM800K_REV = "df7f9ba"
PRM800K_FILES = ("phase1_test.stepwise-critic.parquet", "phase1_train_plus.stepwise-critic.parquet")


def prm800k_solved(repo: str) -> list[tuple[str, str, bool]]:
    import io

    import pyarrow.parquet as pq
    out = []
    for name in PRM800K_FILES:
        blob = subprocess.run(["git", f"--git-dir={repo}", "show", f"{PRM800K_REV}:{name}"],
                              capture_output=True, check=True).stdout
        for r in pq.read_table(io.BytesIO(blob)).to_pylist():
            if r["is_solution"] and r["rating"] == 1 and r["answer"]:
                out.append(("\n".join([*r["responses"], r["next_response"]]), r["answer"], True))
    return out


def shifted(pairs: list, step: int = 7) -> list[tuple[str, str, bool]]:
    """Each response against another problem's gold (label: wrong): a precision check. A
    response that passes here passed by accident (a list of candidates, a stray number).
    Pairs whose two golds read the same (spaces, ``$`` and a trailing ``.0`` aside) are
    left out."""
    def key(g: str) -> str:
        g = g.replace(" ", "").replace("$", "")
        return g.removesuffix(".0")
    n = len(pairs)
    out = [(pairs[i][0], pairs[(i + step) % n][1], False) for i in range(n)]
    return [p for i, p in enumerate(out) if key(p[1]) != key(pairs[i][1])]


def formats() -> list[tuple[str, str, bool]]:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_math_formats import FORMATS
    return [(text, gold, passed) for rows in FORMATS.values() for text, gold, passed, _ in rows]


def mv_long(repo: str) -> list[tuple[str, str, bool]]:
    sys.path.insert(0, str(ROOT / "bench"))
    from math_verify_cases import load_cases
    return [(c.pred, c.gold, c.expected) for c in load_cases(repo) if not c.short]


def ours(pairs: list) -> list[bool]:
    from dapo_bench.verifiers.math import MathVerifier
    with MathVerifier(workers=1) as v:
        return [x.passed for x in v.verify_batch([p for p, _, _ in pairs], [g for _, g, _ in pairs])]


def math_verify(pairs: list) -> list[bool]:
    import logging

    from math_verify import parse, verify
    logging.disable(logging.CRITICAL)
    out = []
    for pred, gold, _ in pairs:
        g = gold if ("$" in gold or "\\boxed" in gold) else f"${gold}$"
        try:
            out.append(bool(verify(parse(g), parse(pred))))
        except Exception:  # noqa: BLE001 - a crash is a "not equal", as math-verify's own default
            out.append(False)
    return out


def before(rev: str, sets: dict) -> dict[str, list[bool]]:
    """Verdicts of commit *rev*'s verifier, in a subprocess importing only that tree."""
    with tempfile.TemporaryDirectory() as tmp:
        arch = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "dapo_bench", "verifiers",
                               "tasks"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=arch, check=True)
        os.symlink("../verifiers", Path(tmp, "dapo_bench", "verifiers"))
        os.symlink("../tasks", Path(tmp, "dapo_bench", "task_specs"))
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
    import verify_math
    texts = {"boxed (verify_math mixed)": [p for _, p, _ in
                                           verify_math._pairs_mixed(random.Random(0), 600)]}
    texts.update({k: [p for p, _, _ in v] for k, v in sets.items() if k != "formats"})
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gsm8k-repo", help="openai/grade-school-math checkout or git dir")
    ap.add_argument("--math-verify-repo", help="Math-Verify checkout or git dir (its tests)")
    ap.add_argument("--prm800k-repo", help="xhghhh/Enhancing-PRM800K git dir (PRM800K phase 1)")
    ap.add_argument("--before", default="60d84a8", help="earlier commit to compare ('' = none)")
    ap.add_argument("--speed", action="store_true", help="also time find_answer vs --before")
    args = ap.parse_args()
    sets = {"formats": formats()}
    if args.gsm8k_repo:
        sets["gsm8k-gpt3"] = gsm8k_gpt3(args.gsm8k_repo)
    if args.prm800k_repo:
        sets["prm800k-solved"] = prm800k_solved(args.prm800k_repo)
        sets["prm800k-shifted"] = shifted(sets["prm800k-solved"])
    if args.gsm8k_repo:
        sets["gsm8k-shifted"] = shifted(sets["gsm8k-gpt3"][::4], step=1)
    if args.math_verify_repo:
        sets["mv-long"] = mv_long(args.math_verify_repo)
    old = before(args.before, sets) if args.before else {}
    print("| set | pairs (right) | judge | agreement | false \"equal\" | false \"not equal\" |")
    print("|---|---|---|---|---|---|")
    for name, pairs in sets.items():
        labels = [lab for _, _, lab in pairs]
        judges = {"ours": ours(pairs)}
        if name in old:
            judges[f"ours @ {args.before}"] = old[name]
        judges["math-verify 0.9.0"] = math_verify(pairs)
        for judge, passed in judges.items():
            s = score(passed, labels)
            print(f"| {name} | {s['n']} ({sum(labels)}) | {judge} | {s['agree']}/{s['n']} "
                  f"({100 * s['agree'] / s['n']:.1f}%) | {s['false_eq']} | {s['false_ne']} |")
    if args.speed and args.before:
        extract_speed(args.before, sets)


if __name__ == "__main__":
    main()
