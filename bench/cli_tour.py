"""A new user's tour of the CLI: every sub-command with bad and good input, as subprocesses.

    python bench/cli_tour.py                  # a few minutes on CPU, offline (embedded arith toy)
    python bench/cli_tour.py --keep /tmp/tour # keep the work dir to look at
    python bench/cli_tour.py --only eval      # the cases of one sub-command

Runs ``python -m dapo_bench.cli`` of this tree (the code under test, not an installed copy) in a
fresh work dir and reports, per case:

- a traceback anywhere in its output (always a finding);
- for bad input: exit status 2 and stderr exactly one line ``error: ...`` (else a finding);
- for good input: exit status 0 (``sandbox check`` may exit 1 where isolation is missing);
- that nothing already written was lost: every file that existed before the command (in the
  work dir and the repository's committed ``leaderboards/``) still exists with the same bytes,
  except the paths a good case declares it writes.

Exit status 1 when any case has a finding. The peer is the user's expectation, not a program:
there is no ratio to print. Not covered: Ctrl-C and kill -9 (tests/**/test_*resume*), multi-rank
launches, the vLLM backend, real hub models (offline).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "dapo_bench.cli"]
# a small DAPO run on the embedded toy (tiny reference, a few problems): a minute or two on CPU
TINY_TRAIN = ["--set", "n_problems=8", "--set", "n_samples=2", "--n-rollouts", "2",
              "--mc-samples", "2", "--set", "actor.epochs=1", "--eval-limit", "8",
              "--eval-max-new-tokens", "16", "--no-control", "--threads", "1", "--quiet"]


@dataclass
class Case:
    name: str  # "<sub-command>: what"
    args: list[str]
    good: bool  # True: must succeed; False: must be a one-line error, exit 2
    writes: tuple[str, ...] = ()  # work-dir paths a good case may create or change
    ok_codes: tuple[int, ...] = (0,)
    findings: list[str] = field(default_factory=list)
    rc: int | None = None
    seconds: float = 0.0
    first_line: str = ""


def cases(w: Path) -> list[Case]:
    """The tour, in order (later cases use what earlier good ones wrote). ``w``: the work dir."""
    runs, board = str(w / "runs"), str(w / "board")
    preds, verdicts = str(w / "preds.jsonl"), str(w / "verdicts.jsonl")
    return [
        Case("root: no arguments", [], True),
        Case("root: --version", ["--version"], True),
        Case("root: unknown command", ["evaluate"], False),
        *[Case(f"{c}: -h", [*c.split(), "-h"], True) for c in
          ("list", "verify", "eval", "train", "leaderboard", "audit", "sandbox", "sandbox check")],
        Case("list", ["list"], True),
        # verify
        Case("verify: no such file", ["verify", str(w / "nosuch.jsonl")], False),
        Case("verify: a directory", ["verify", str(w)], False),
        Case("verify: bad JSON line", ["verify", str(w / "bad.jsonl")], False),
        Case("verify: binary bytes", ["verify", str(w / "binary.jsonl")], False),
        Case("verify: field missing", ["verify", preds, "--gold-field", "answer"], False),
        Case("verify: unknown verifier", ["verify", preds, "--verifier", "nosuch"], False),
        Case("verify: --out is the input", ["verify", preds, "--out", preds], False),
        Case("verify: --out is a directory", ["verify", preds, "--out", str(w)], False),
        Case("verify: old short flag -v", ["verify", preds, "-v", "math"], False),
        Case("verify: math", ["verify", preds, "--out", verdicts, "--workers", "1"], True,
             writes=("verdicts.jsonl",)),
        Case("verify: math to stdout, --explain", ["verify", preds, "--explain", "--workers", "1"],
             True),
        # sandbox
        Case("sandbox check --json", ["sandbox", "check", "--json"], True, ok_codes=(0, 1)),
        # eval
        Case("eval: nothing to evaluate", ["eval"], False),
        Case("eval: unknown task", ["eval", "--tasks", "nosuch", "--out", runs], False),
        Case("eval: empty name in list", ["eval", "--tasks", "arith,", "--out", runs], False),
        Case("eval: --limit not a number", ["eval", "--tasks", "arith", "--limit", "x"], False),
        Case("eval: --top-p 2", ["eval", "--tasks", "arith", "--top-p", "2", "--out", runs,
                                 "--run-id", "e0"], False),
        Case("eval: --n 2 greedy", ["eval", "--tasks", "arith", "--n", "2", "--out", runs,
                                    "--run-id", "e0"], False),
        Case("eval: the corrected command, same run id", [
            "eval", "--tasks", "arith", "--limit", "4", "--out", runs, "--run-id", "e0",
            "--quiet"], True, writes=("runs/e0",)),
        Case("eval: --out is a file", ["eval", "--tasks", "arith", "--limit", "2", "--out",
                                       preds], False),
        Case("eval: --data-file no =", ["eval", "--tasks", "arith", "--data-file", "x.jsonl"],
             False),
        Case("eval: --run-id with a separator", ["eval", "--tasks", "arith", "--limit", "2",
                                                 "--out", runs, "--run-id", "../escape"], False),
        Case("eval: arith, 10 problems", ["eval", "--tasks", "arith", "--limit", "10", "--out",
                                          runs, "--run-id", "e1", "--quiet"], True,
             writes=("runs/e1",)),
        Case("eval: the same again (resumes)", ["eval", "--tasks", "arith", "--limit", "10",
                                                "--out", runs, "--run-id", "e1", "--quiet"],
             True, writes=("runs/e1",)),
        Case("eval: same run id, other sampling", ["eval", "--tasks", "arith", "--limit", "10",
                                                   "--temperature", "0.5", "--out", runs,
                                                   "--run-id", "e1", "--quiet"], False),
        # train
        Case("train: no --method", ["train"], False),
        Case("train: unknown method", ["train", "--method", "nosuch", "--out", runs], False),
        Case("train: DAPO flag on sft", ["train", "--method", "sft", "--beta", "0.1", "--out",
                                         runs], False),
        Case("train: unknown eval task", ["train", "--method", "dapo", *TINY_TRAIN,
                                          "--eval-tasks", "nosuch", "--out", runs,
                                          "--run-id", "t0"], False),
        Case("train: --eval-limit 0", ["train", "--method", "dapo", *TINY_TRAIN, "--eval-limit",
                                       "0", "--out", runs, "--run-id", "t0"], False),
        Case("train: tiny DAPO, the corrected command after those", [
            "train", "--method", "dapo", *TINY_TRAIN, "--out", runs, "--run-id", "t0"], True,
            writes=("runs/t0",)),
        Case("train: --deepspeed bogus", ["train", "--method", "dapo", *TINY_TRAIN,
                                          "--deepspeed", "bogus", "--out", runs], False),
        Case("train: --budget-flops -1", ["train", "--method", "dapo", *TINY_TRAIN,
                                          "--budget-flops", "-1", "--out", runs], False),
        Case("train: --set bad key", ["train", "--method", "dapo", *TINY_TRAIN, "--set",
                                      "nosuch=1", "--out", runs], False),
        Case("train: eval task as training task", ["train", "--method", "dapo", *TINY_TRAIN,
                                                   "--task", "arith_ood", "--out", runs], False),
        Case("train: the same again (resumes)", ["train", "--method", "dapo", *TINY_TRAIN,
                                                 "--out", runs, "--run-id", "t0"], True,
             writes=("runs/t0",)),
        # audit
        Case("audit: no such dir", ["audit", str(w / "runs" / "nosuch")], False),
        Case("audit: the tiny DAPO run", ["audit", str(w / "runs" / "t0"), "--json"], True),
        # leaderboard
        Case("leaderboard: no such spec", ["leaderboard", str(w / "nosuch.yaml"), "--out", board],
             False),
        Case("leaderboard: binary spec", ["leaderboard", str(w / "binary.yaml"), "--out", board],
             False),
        Case("leaderboard: --runs typo", ["leaderboard", str(ROOT / "leaderboards/arith.yaml"),
                                          "--runs", str(w / "nosuch"), "--out", board], False),
        Case("leaderboard: --out is a file", ["leaderboard", str(ROOT / "leaderboards/arith.yaml"),
                                              "--out", preds, "--no-plots"], False),
        Case("leaderboard: arith into --out", ["leaderboard",
                                               str(ROOT / "leaderboards/arith.yaml"), "--out",
                                               board, "--no-plots"], True, writes=("board",)),
    ]


def inputs(w: Path) -> None:
    rows = [{"prediction": "so the answer is \\boxed{4}", "gold": "4"},
            {"prediction": "7", "gold": "8"}, {"prediction": "1/2", "gold": "0.5"}]
    (w / "preds.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (w / "bad.jsonl").write_text('{"prediction": "1", "gold": "1"}\n{"prediction": \n')
    (w / "binary.jsonl").write_bytes(b'{"prediction": "1", "gold": "1"}\n\xff\xfe\x00\x81\n')
    (w / "binary.yaml").write_bytes(b"name: x\n\xff\xfe\x00\x81: y\n")


def snapshot(dirs: list[Path]) -> dict[str, str]:
    out = {}
    for d in dirs:
        for p in d.rglob("*") if d.is_dir() else ():
            if p.is_file() and not p.is_symlink():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def run_case(c: Case, w: Path, watched: list[Path], timeout: int) -> None:
    inputs(w)  # afresh: an earlier case may have clobbered one (that case reports it)
    before = snapshot(watched)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "COLUMNS": "100",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    t0 = time.perf_counter()
    try:
        p = subprocess.run([*CLI, *c.args], cwd=w, env=env, capture_output=True, text=True,
                           timeout=timeout, check=False)
        c.rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        c.rc, out, err = None, str(e.stdout or ""), str(e.stderr or "")
        c.findings.append(f"timed out after {timeout}s")
    c.seconds = time.perf_counter() - t0
    c.first_line = (err.strip() or out.strip()).splitlines()[0][:160] if (err + out).strip() \
        else ""
    if "Traceback (most recent call last)" in out + err:
        c.findings.append("traceback: " + (err or out).strip().splitlines()[-1][:200])
    if c.good and c.rc is not None and c.rc not in c.ok_codes:
        c.findings.append(f"exit {c.rc} for good input: {c.first_line}")
    if not c.good and c.rc is not None:
        lines = err.strip().splitlines()
        if c.rc != 2:
            c.findings.append(f"exit {c.rc}, not 2, for bad input" + (
                f" ({c.first_line})" if c.first_line else " (accepted silently)"))
        if len(lines) != 1 or not lines[0].startswith("error: "):
            c.findings.append(f"stderr is {len(lines)} lines, not one 'error: ...' line")
    allowed = tuple(str(w / x) for x in c.writes) if c.good else ()
    after = snapshot(watched)
    for path, digest in before.items():
        if path.startswith(allowed):
            continue
        if path not in after:
            c.findings.append(f"lost {path}")
        elif after[path] != digest:
            c.findings.append(f"changed {path}")


def main(
    keep: Annotated[Path | None, typer.Option(help="work dir to use and keep")] = None,
    only: Annotated[str | None, typer.Option(help="run only cases whose name starts so")] = None,
    timeout: Annotated[int, typer.Option(help="seconds per case")] = 600,
    as_json: Annotated[bool, typer.Option("--json/--no-json", help="print JSON")] = False,
) -> None:
    w = keep or Path(tempfile.mkdtemp(prefix="cli-tour-"))
    w.mkdir(parents=True, exist_ok=True)
    watched = [w, ROOT / "leaderboards"]
    todo = [c for c in cases(w) if only is None or c.name.startswith(only)]
    t0 = time.perf_counter()
    for c in todo:
        run_case(c, w, watched, timeout)
        mark = "ok  " if not c.findings else "FIND"
        print(f"{mark} {c.seconds:6.1f}s rc={c.rc} {c.name}: {c.first_line[:90]}", flush=True)
        for f in c.findings:
            print(f"       - {f}", flush=True)
    bad = [c for c in todo if c.findings]
    if as_json:
        print(json.dumps([{"name": c.name, "args": c.args, "rc": c.rc, "seconds": c.seconds,
                           "findings": c.findings} for c in todo], indent=1))
    print(f"{len(todo)} cases in {time.perf_counter() - t0:.0f}s: {len(bad)} with findings"
          + ("" if keep else f"; work dir {w} removed"))
    if not keep:
        shutil.rmtree(w, ignore_errors=True)
    raise typer.Exit(1 if bad else 0)


if __name__ == "__main__":
    typer.run(main)
