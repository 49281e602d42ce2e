"""Speed on real model responses: ours as the CLI vs math-verify 0.9.0, whole processes, one run.

Called by ``verify_math.py --real SET,...`` (the sets and their repository flags are
``verify_math_corpus.py``'s: ``skythought-long`` is the long-reasoning set, 2,044 Sky-T1
responses of 5 K to 170 K characters; ``processbench-*`` and ``skythought-chat`` are instruct
models' step-by-step solutions; see ``math_corpora.py``). For each set both verifiers run as
what a user starts, over the same ``{"prediction", "gold"}`` rows:

- ours: ``python -m dapo_bench.cli verify --verifier math FILE --workers 1 --out OUT`` (the
  process, its imports, its one sympy worker started when a pair first needs it);
- math-verify: ``python -c MV_CLI FILE OUT``, one process running ``verify(parse(gold),
  parse(prediction))`` row by row (the gold in ``$..$`` when it has no delimiter).

CPU seconds are the child's user + system time with everything it waited for (our sympy
worker is killed and reaped by the CLI, so its time counts), from ``getrusage(RUSAGE_CHILDREN)``
around each run; wall seconds beside them. One run each, ours first (then, with ``--real-rev
REV``, commit REV's CLI from a ``git archive`` of it, its ratio printed beside), math-verify
last; the ratio is math-verify's CPU seconds over ours. Both verdicts are scored against the set's labels. The
children run with bytecode cached, as any run after the first (see ``ENV``).

``--profile`` splits our time on each set: interpreter start-up, imports, the CLI with one
trivial pair (no sympy worker), the sympy worker's start-up (its CPU after ``warm()``, read from
``/proc``), and in process, over the whole set (fresh caches, thread CPU time): extraction
(``find_answer``), the gold's reading (``gold_answer``), cleaning and parsing
(``check.prepare``, both sides), the fast comparison (``fast_compare``), the pairs sent to
sympy (count, the parent's wall time waiting for them, the workers' CPU: each timeout kills
its worker, and the next pair starts a new one, start-up and warm-up again); with
``--real-rev``, the same for that commit's verifier, in a process importing its tree.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MV_CLI = """
import json, logging, sys
logging.disable(logging.WARNING)
from math_verify import parse, verify
def judge(r):
    try:
        return bool(verify(parse(r["gold"]), parse(r["prediction"])))
    except Exception:
        return False
rows = [json.loads(line) for line in open(sys.argv[1])]
json.dump([judge(r) for r in rows], open(sys.argv[2], "w"))
"""


def dollar(gold: str) -> str:
    """The gold as math-verify's ``parse`` reads LaTeX: in ``$..$`` unless it has a delimiter."""
    return gold if any(d in gold for d in ("$", "\\(", "\\[", "\\boxed")) else f"${gold}$"


# The children run as a user's second run does: with bytecode cached. PYTHONDONTWRITEBYTECODE
# (set on some machines) would make every process compile this project's modules from source
# (about 0.1 CPU s for the CLI, more for a sympy worker), a cost no installed package pays.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


ROOT = Path(__file__).resolve().parents[1]


def compile_project(root: Path = ROOT) -> None:
    """Write the bytecode of the package tree at *root* (``__pycache__``, git-ignored) before
    anything is timed."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "dapo_bench"),
                    str(root / "verifiers")], check=True, env=ENV, stdout=subprocess.DEVNULL)


def child_run(cmd: list[str], tree: str | None = None) -> tuple[float, float]:
    """Run *cmd* to completion (with the package of *tree*, a ``checkout()``, when given); its
    (wall, CPU) seconds, CPU = user + system of the child and of every descendant it reaped."""
    env = ENV if tree is None else {**ENV, "PYTHONPATH": tree}
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env, cwd=tree)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def ours_cmd(file: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "dapo_bench.cli", "verify", "--verifier", "math", str(file),
            "--workers", "1", "--out", str(out)]


def write_rows(path: Path, pairs: list, mv: bool) -> None:
    path.write_text("".join(json.dumps({"prediction": p[0], "gold": dollar(p[1]) if mv
                                        else p[1]}) + "\n" for p in pairs))


def real_speed(name: str, pairs: list, rev: tuple[str, str] | None = None) -> dict:
    """Both verifiers over *pairs* (response, gold, label, ...) as whole processes, one run;
    with *rev* = (commit, its ``checkout()`` tree), that commit's CLI too, after ours."""
    work = Path(tempfile.mkdtemp(prefix="verify_math_real_"))
    ours_in, mv_in, ours_out, mv_out = (work / n for n in ("ours.jsonl", "mv.jsonl",
                                                           "ours.out", "mv.out"))
    write_rows(ours_in, pairs, mv=False)
    write_rows(mv_in, pairs, mv=True)
    compile_project()
    t_ours = child_run(ours_cmd(ours_in, ours_out))
    t_rev = child_run(ours_cmd(ours_in, work / "rev.out"), rev[1]) if rev else None
    t_mv = child_run([sys.executable, "-c", MV_CLI, str(mv_in), str(mv_out)])
    ours = [json.loads(line)["passed"] for line in ours_out.open()]
    peer = json.loads(mv_out.read_text())
    labels = [p[2] for p in pairs]
    n, chars = len(pairs), sum(len(p[0]) for p in pairs)
    row = {"set": name, "n": n, "mean_chars": chars / n, "ours_wall": t_ours[0],
           "ours_cpu": t_ours[1], "mv_wall": t_mv[0], "mv_cpu": t_mv[1],
           "ratio_cpu": t_mv[1] / t_ours[1], "ratio_wall": t_mv[0] / t_ours[0],
           "ours_agree": sum(a == b for a, b in zip(ours, labels)),
           "mv_agree": sum(a == b for a, b in zip(peer, labels))}

    print(f"[{name}, whole processes] {n} responses, mean {row['mean_chars']:.0f} chars: "
          f"ours {row['ours_cpu']:.2f} CPU s ({row['ours_wall']:.2f} s wall), math-verify "
          f"{row['mv_cpu']:.2f} CPU s ({row['mv_wall']:.2f} s wall); ratio mv/ours "
          f"{row['ratio_cpu']:.1f}x CPU, {row['ratio_wall']:.1f}x wall; agreement with the "
          f"labels: ours {row['ours_agree']}/{n}, math-verify {row['mv_agree']}/{n}", flush=True)
    if rev:
        rev_pass = [json.loads(line)["passed"] for line in (work / "rev.out").open()]
        print(f"[{name}, {rev[0]}'s CLI] {t_rev[1]:.2f} CPU s ({t_rev[0]:.2f} s wall); ratio "
              f"mv/{rev[0]} {t_mv[1] / t_rev[1]:.1f}x CPU; agreement with the labels "
              f"{sum(a == b for a, b in zip(rev_pass, labels))}/{n}", flush=True)
    return row


def run(sets: dict, profile_too: bool, rev: str | None) -> None:
    """The real-response sets, ours (the CLI) vs math-verify as whole processes, one run each,
    with commit *rev*'s CLI too when given; with *profile_too*, where our time goes on each."""
    sys.path.insert(0, str(ROOT / "bench"))
    from verify_math_corpus import checkout

    with tempfile.TemporaryDirectory() as tree:
        if rev:
            checkout(rev, tree)
            compile_project(Path(tree))
        rows = [real_speed(name, pairs, (rev, tree) if rev else None)
                for name, pairs in sets.items()]
        table(rows)
        for name, pairs in sets.items() if profile_too else ():
            profile(name, pairs)
            if rev:
                profile_rev(name, pairs, rev, tree)


def table(rows: list[dict]) -> None:
    markdown(["real set", "responses", "mean chars", "ours CPU s (wall)",
              "math-verify CPU s (wall)", "CPU ratio", "wall ratio",
              "agree with labels: ours / mv"],
             [[r["set"], r["n"], f"{r['mean_chars']:.0f}",
               f"{r['ours_cpu']:.2f} ({r['ours_wall']:.2f})",
               f"{r['mv_cpu']:.2f} ({r['mv_wall']:.2f})", f"{r['ratio_cpu']:.1f}x",
               f"{r['ratio_wall']:.1f}x", f"{r['ours_agree']} / {r['mv_agree']} of {r['n']}"]
              for r in rows])


def markdown(header: list[str], rows: list[list]) -> None:
    """Print a markdown table (after a blank line): *header*, its rule, then *rows*."""
    print("\n| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for cells in rows:
        print("| " + " | ".join(map(str, cells)) + " |")


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) so far of the live process *pid* (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Timed:
    """Wrap module attributes so that each call adds its thread CPU time (and count)."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.wall: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._undo: list = []

    def wrap(self, mod, name: str, key: str) -> None:
        fn = getattr(mod, name)

        def timed(*a, **k):
            c0, w0 = time.thread_time(), time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.cpu[key] = self.cpu.get(key, 0.0) + time.thread_time() - c0
                self.wall[key] = self.wall.get(key, 0.0) + time.perf_counter() - w0
                self.calls[key] = self.calls.get(key, 0) + 1

        setattr(mod, name, timed)
        self._undo.append((mod, name, fn))

    def restore(self) -> None:
        for mod, name, fn in reversed(self._undo):
            setattr(mod, name, fn)


def _verifier_modules(vm) -> list:
    """The modules whose code calls the timed functions: ``verifier``, and ``item`` where a
    later version moved one item's check there (``_slow`` became ``slow``)."""
    try:
        from dapo_bench.verifiers.math import item
    except ImportError:
        return [vm]
    return [vm, item]


def profile_rev(name: str, pairs: list, rev: str, tree: str) -> None:
    """:func:`profile` of commit *rev*'s verifier (its ``checkout()`` in *tree*), run in a
    process that imports that tree."""
    src = Path(tree, "profile_pairs.json")
    src.write_text(json.dumps(pairs))
    code = (f"import json, sys; sys.path.insert(0, {str(ROOT / 'bench')!r}); "
            "import verify_math_real as r; "
            f"r.profile({name + ' @ ' + rev!r}, json.load(open({str(src)!r})))")
    subprocess.run([sys.executable, "-c", code], env={**ENV, "PYTHONPATH": tree}, cwd=tree,
                   check=True)


def profile(name: str, pairs: list) -> None:
    """Where our CLI's time goes on *pairs* (see the module docstring)."""
    from dapo_bench.verifiers.math import MathVerifier
    from dapo_bench.verifiers.math import verifier as vm
    from dapo_bench.verifiers.math.check import prepare
    from dapo_bench.verifiers.math.extract import gold_answer

    work = Path(tempfile.mkdtemp(prefix="verify_math_profile_"))
    compile_project()
    one = work / "one.jsonl"
    one.write_text(json.dumps({"prediction": "So the answer is $\\boxed{12}$.", "gold": "12"})
                   + "\n")
    start = {"interpreter (python -c pass)": child_run([sys.executable, "-c", "pass"]),
             "+ imports (import dapo_bench.cli)": child_run([sys.executable, "-c",
                                                             "import dapo_bench.cli"]),
             "CLI, one fast pair (no worker)": child_run(ours_cmd(one, work / "one.out"))}
    v = MathVerifier(workers=1)
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    v.warm()
    warm_wall = time.perf_counter() - t0
    worker_start = _proc_cpu(v._pool.pids()[0])
    prepare.cache_clear()
    gold_answer.cache_clear()
    timed = _Timed()
    for mod in _verifier_modules(vm):
        for fn in ("find_answer", "gold_answer", "prepare", "fast_compare", "_slow", "slow"):
            if hasattr(mod, fn):
                timed.wrap(mod, fn, fn.lstrip("_"))
    c0, w0 = time.thread_time(), time.perf_counter()
    try:
        verdicts = v.verify_batch([p[0] for p in pairs], [p[1] for p in pairs])
    finally:
        timed.restore()
    batch_cpu, batch_wall = time.thread_time() - c0, time.perf_counter() - w0
    v.close()  # kills and reaps the workers: their CPU, replaced ones included, is ours now
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers_cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    starts = 1 + sum(x.reason == "timeout" for x in verdicts)  # a timeout kills its worker
    n = len(pairs)
    print(f"\n[{name}, profile of ours] {n} responses")
    for what, (wall, cpu) in start.items():
        print(f"  start-up  {what:38s} {cpu:6.2f} CPU s  {wall:6.2f} s wall")
    print(f"  start-up  {'sympy worker: start + warm-up pairs':38s} {worker_start:6.2f} CPU s  "
          f"{warm_wall:6.2f} s wall (warm())")
    print(f"  in process, verify_batch total: {batch_cpu:.2f} CPU s ({batch_wall:.2f} s wall)")
    labels = {"find_answer": "extraction (find_answer)", "gold_answer": "gold reading (gold_answer)",
              "prepare": "clean + parse (prepare, both sides)",
              "fast_compare": "fast comparison (fast_compare)",
              "slow": "sympy pairs: parent's wait (wall) / CPU"}
    for fn, label in labels.items():
        k = timed.calls.get(fn, 0)
        per = timed.cpu.get(fn, 0.0) / max(k, 1) * 1e6
        print(f"    {label:42s} {timed.cpu.get(fn, 0.0):6.2f} CPU s  "
              f"{timed.wall.get(fn, 0.0):6.2f} s wall  {k:6d} calls  {per:8.1f} us/call")
    print(f"    sympy workers: {starts} started ({starts - 1} after a timeout killed one), "
          f"{workers_cpu:.2f} CPU s in all, about {workers_cpu - starts * worker_start:.2f} "
          f"of it on the {timed.calls.get('slow', 0)} pairs; the slowest (wall, rule, gold vs "
          f"answer):")
    slow = sorted((x for x in verdicts if "sympy" in x.details.get("rule", "")
                   or x.reason in ("timeout", "parse_error")), key=lambda x: -x.seconds)
    for x in slow[:5]:
        gold = next(p[1] for p, y in zip(pairs, verdicts) if y is x)
        print(f"      {x.seconds:6.2f} s  {x.details.get('rule', x.reason)[:32]:32s} "
              f"{gold[:40]!r} vs {str(x.extracted)[:50]!r}")
