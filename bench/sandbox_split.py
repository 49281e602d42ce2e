"""The cost of the program/checker split (issue 14): this tree vs the tree before it, one run.

    nice -n 5 unshare --pid --fork --mount-proc python3 bench/sandbox.py --before-after \\
        [--before REV] [--rounds 5]

``--before`` (default: the commit before verifiers/code/checker.py was added, i.e. the
in-process assert harness) is extracted with ``git archive`` into a temporary folder. Each tree
runs in a process of its own (its own pool of ``--workers`` workers, started and warmed up
before timing); the two are driven in turn, round after round (before, after, before, ...), on
the same workloads, so that a noisy shared machine hits both alike; the medians over rounds are
compared. Workloads, all real data from ../shared/data/code (reference solutions):

* HumanEval (164 problems, 1 check each), MBPP (398; #71, seconds of CPU, left out; one check
  per assert), LeetCode (200, 1 check each): assert-based, through the checker after the split;
* stdin: the codeforces workload of bench/codeforces_stdin.py, 4 copies; call: MBPP's ``assert f(literals) ==
  literal`` tests rewritten as call-based tests (fn_name, inputs, outputs).

Then both trees get the attack table of tests/verifiers/code/test_sandbox_forge.py (hostile
programs: hence the PID namespace) and the forged passes are counted. Prints, per workload:
tests/s before and after (medians over rounds), their ratio, the median of the per-round ratios
(robust to the load drifting between rounds), and the passes.
"""

from __future__ import annotations

import ast
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]

KINDS = ("humaneval", "mbpp", "leetcode", "stdin", "call")


def _call_tests(references: list[str], asserts: list[dict]) -> tuple[list[str], list[dict]]:
    """MBPP references whose every assert is ``f(literals) == literal``, as call-based tests."""
    programs, tests = [], []
    for code, r in zip(references, asserts):
        ins, outs, fn = [], [], None
        for t in r["test_list"]:
            try:
                node = ast.parse(t).body[0]
                cmp_, call = node.test, node.test.left
                if not (isinstance(cmp_.ops[0], ast.Eq) and isinstance(call.func, ast.Name)):
                    break
                args = [ast.literal_eval(a) for a in call.args]
                out = ast.literal_eval(cmp_.comparators[0])
                json.dumps([args, out])
            except (AttributeError, IndexError, ValueError, TypeError, SyntaxError):
                break
            if call.keywords or (fn and fn != call.func.id):
                break
            fn = call.func.id
            ins.append(args)
            outs.append(out)
        else:
            if fn and not r["test_imports"]:
                programs.append(code)
                tests.append({"inputs": ins, "outputs": outs, "fn_name": fn})
    return programs, tests


def workload(kind: str) -> tuple[list[str], list]:
    sys.path.insert(1, str(ROOT / "tests"))
    from _data import code_references

    if kind in ("humaneval", "leetcode"):
        return code_references(kind)
    if kind in ("mbpp", "call"):
        programs, tests = code_references("mbpp")
        del programs[71], tests[71]  # seconds of CPU
        return _call_tests(programs, tests) if kind == "call" else (programs, tests)
    from codeforces_stdin import workload as stdin_workload

    p, i, o = stdin_workload()
    return p * 4, [{"inputs": a, "outputs": b} for a, b in zip(i, o)] * 4


# --------------------------------------------------------------------------- one tree's side


def _forge(run_tests_batch, limits_cls, workers: int) -> dict:
    """The attack table of tests/verifiers/code/test_sandbox_forge.py (this checkout's) against
    this tree."""
    sys.path.insert(1, str(ROOT / "tests" / "verifiers" / "code"))
    from test_sandbox_forge import ATTACKS, FORMS, program

    cases = [(a, f) for a in sorted(ATTACKS) for f in sorted(FORMS)]
    lim = limits_cls(time_s=1.0, wall_s=2.0, memory_mb=1024)
    verdicts = run_tests_batch([program(a, f) for a, f in cases],
                               [FORMS[f][1] for _, f in cases], lim, workers)
    forged = [f"{a}/{f}" for (a, f), v in zip(cases, verdicts) if v.passed]
    return {"forged": forged, "of": len(cases)}


def _side(tree: str, workers: int) -> None:
    """In a process of its own: import the verifier from ``tree``, then time workloads on
    request (one ``KIND`` per line on stdin -> one JSON line on stdout)."""
    sys.path.insert(0, tree)
    boot = (f"import sys; sys.path.insert(0, {tree!r}); "
            "from dapo_bench.verifiers.code.worker import main; main()")
    real_popen = subprocess.Popen

    def popen(cmd, *a, **k):  # an old pool starts ``-m ...worker``: make it this tree's
        if isinstance(cmd, list) and "dapo_bench.verifiers.code.worker" in cmd:
            j = cmd.index("dapo_bench.verifiers.code.worker")
            cmd = cmd[:j - 1] + ["-c", boot] + cmd[j + 1:]
        return real_popen(cmd, *a, **k)

    subprocess.Popen = popen
    from dapo_bench.verifiers.code import Limits, run_tests_batch
    from dapo_bench.verifiers.code.formats import parse_tests

    lim = Limits(time_s=8.0)
    loads = {k: workload(k) for k in KINDS}
    run_tests_batch(loads["mbpp"][0][:8], loads["mbpp"][1][:8], lim, workers)  # warm up
    print(json.dumps({"ready": __import__("dapo_bench").__file__}), flush=True)
    for line in sys.stdin:
        kind = line.strip()
        if kind == "forge":
            print(json.dumps(_forge(run_tests_batch, Limits, workers)), flush=True)
            continue
        programs, tests = loads[kind]
        n = sum(parse_tests(t).n_tests for t in tests)
        t0 = time.perf_counter()
        verdicts = run_tests_batch(programs, tests, lim, workers)
        secs = time.perf_counter() - t0
        print(json.dumps({"kind": kind, "tests": n, "seconds": secs,
                          "passed": sum(v.passed for v in verdicts), "programs": len(programs)}),
              flush=True)


# --------------------------------------------------------------------------- the driver


def _before_rev(rev: str | None) -> str:
    if rev:
        return rev
    added = subprocess.run(["git", "-C", str(ROOT), "log", "--diff-filter=A", "--format=%H",
                            "--", "verifiers/code/checker.py"], capture_output=True, text=True,
                           check=True).stdout.split()
    if not added:
        raise SystemExit("error: --before: no commit adds verifiers/code/checker.py here")
    return added[-1] + "^"


def _extract(rev: str, dest: Path) -> None:
    arch = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "dapo_bench",
                           "verifiers", "tasks"], capture_output=True, check=False)
    if arch.returncode:
        raise SystemExit(f"error: --before {rev}: {arch.stderr.decode().strip()}")
    with tempfile.TemporaryFile() as f:
        f.write(arch.stdout)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(dest, filter="data")
    for name, target in (("verifiers", "verifiers"), ("task_specs", "tasks")):
        link = dest / "dapo_bench" / name
        if not link.exists():
            link.symlink_to(dest / target)


def _tree_of_this_checkout(dest: Path) -> str:
    """This checkout as an importable tree (dapo_bench/verifiers -> verifiers, as installed)."""
    if (ROOT / "dapo_bench" / "verifiers").exists():
        return str(ROOT)
    (dest / "dapo_bench").mkdir(parents=True)
    for p in (ROOT / "dapo_bench").iterdir():
        (dest / "dapo_bench" / p.name).symlink_to(p)
    (dest / "dapo_bench" / "verifiers").symlink_to(ROOT / "verifiers")
    (dest / "dapo_bench" / "task_specs").symlink_to(ROOT / "tasks")
    return str(dest)


def before_after(rev: str | None, rounds: int, workers: int) -> None:
    rev = _before_rev(rev)
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="dapo-split-") as tmp:
        _extract(rev, Path(tmp) / "before")
        trees = {"before": str(Path(tmp) / "before"),
                 "after": _tree_of_this_checkout(Path(tmp) / "after")}
        sides = {}
        for name, tree in trees.items():
            sides[name] = subprocess.Popen(
                [sys.executable, str(HERE), "--side", tree, "--workers", str(workers)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/")
            ready = json.loads(sides[name].stdout.readline())
            print(f"{name}: {rev if name == 'before' else 'this checkout'} "
                  f"({ready['ready']})", flush=True)
        got: dict = {(s, k): [] for s in sides for k in KINDS}
        for r in range(rounds):
            for kind in KINDS:
                for name in (("before", "after") if r % 2 == 0 else ("after", "before")):
                    sides[name].stdin.write(kind + "\n")
                    sides[name].stdin.flush()
                    got[name, kind].append(json.loads(sides[name].stdout.readline()))
            print(f"round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
        forged = {}
        for name, side in sides.items():
            side.stdin.write("forge\n")
            side.stdin.flush()
            forged[name] = json.loads(side.stdout.readline())
        for side in sides.values():
            side.stdin.close()
            side.wait()
    print(f"\n{rounds} rounds, interleaved; {workers} workers each; load average "
          f"{load0:.1f} -> {os.getloadavg()[0]:.1f}; medians of tests/s")
    print("| workload | tests | before tests/s | after tests/s | after/before | per-round ratios "
          "(median) | passed before | passed after |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for kind in KINDS:
        b, a = got["before", kind], got["after", kind]
        rate = {n: [x["tests"] / x["seconds"] for x in runs] for n, runs in (("b", b), ("a", a))}
        med = {n: statistics.median(v) for n, v in rate.items()}
        per_round = statistics.median(x / y for x, y in zip(rate["a"], rate["b"]))
        print(f"| {kind} | {a[0]['tests']} | {med['b']:.0f} | {med['a']:.0f} | "
              f"{med['a'] / med['b']:.2f}x | {per_round:.2f}x | "
              f"{b[0]['passed']}/{b[0]['programs']} | {a[0]['passed']}/{a[0]['programs']} |")
    for name, f in forged.items():
        print(f"\nforged passes, {name}: {len(f['forged'])} of {f['of']} (attack x form of "
              f"tests/verifiers/code/test_sandbox_forge.py){': ' if f['forged'] else ''}"
              f"{', '.join(f['forged'])}")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--side":
        _side(sys.argv[2], int(sys.argv[sys.argv.index("--workers") + 1]))
    else:
        raise SystemExit("run through bench/sandbox.py --before-after")
