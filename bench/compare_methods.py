"""All training methods at the same FLOP budget on ``arith``: one command, one table.

    python bench/compare_methods.py --budget-flops 6e11

runs ``base`` (the reference policy, evaluated only), then ``sft``, ``rft``, ``dpo``, ``grpo``,
``ppo`` and ``dapo`` (DAPO, Liu et al., step-level), each with its ``toy`` preset and
``--budget-flops F`` (a target every method reaches within 5%, ``dapo_bench.training.budget``),
through the same ``run_training`` as ``dapo-bench train``. Each run writes
``<out>/<method>/results.json`` (default out: ``leaderboards/runs/arith/seeds/s<seed>``, the
layout the leaderboard averages over; ``{seed}`` in ``--out`` is replaced by the seed);
rerunning resumes (finished stages and evals are skipped). The table: greedy accuracy
in distribution (``arith`` test) and out of distribution (``arith_ood``, 5-step chains) with
bootstrap stderr, the gain over ``base`` with its paired-bootstrap stderr, FLOPs spent, and wall
time (training stages, and the whole run with its evals). The equal-compute SFT control of each
run is off here: the ``sft`` row is that control for every method.

Not covered: several seeds in one command (run it once per seed; the leaderboard's seeds table
averages them), tasks other than the embedded arith default, and machines other than the one it runs on (the wall
times depend on load: say when the machine was shared).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from script_cli import run_main  # bench/, beside this script

METHODS = ("base", "sft", "rft", "dpo", "grpo", "ppo", "dapo")
TASKS = ("arith", "arith_ood")
LABELS = {"dapo": "dapo (Liu et al., step-level)"}
DEFAULT_METHODS = ",".join(METHODS)
DEFAULT_OUT = "leaderboards/runs/arith/seeds/s{seed}"


def run_base(out: Path, model: str, eval_limit: int | None, quiet: bool) -> dict:
    """Evaluate the reference policy alone: ``<out>/base/results.json`` (method ``base``)."""
    from dapo_bench.eval import evaluate

    return evaluate(model, list(TASKS), run_dir=out / "base", limit=eval_limit, quiet=quiet,
                    method="base")


def run_method(method: str, out: Path, model: str, budget: float, eval_limit: int | None,
               seed: int, quiet: bool, overrides: list[str]) -> dict:
    from dapo_bench.run import RunOptions, run_training

    opts = RunOptions(model=model, task="arith", eval_tasks=TASKS, eval_limit=eval_limit,
                      budget_flops=budget, control=False, seed=seed, out=str(out),
                      run_id=method, quiet=quiet)
    return run_training(method, opts, preset="toy", overrides=overrides)


def _acc(res: dict, task: str) -> tuple[float, float | None]:
    m = res["tasks"][task]["metrics"]["acc"]
    return m["value"], m.get("stderr")


def gain_over_base(out: Path, method: str, task: str) -> dict | None:
    from dapo_bench.eval import compare_runs

    run = out / method / "eval" / "final"
    if method == "base" or not run.is_dir():
        return None
    return compare_runs(out / "base", run, task)


def table_rows(out: Path, results: dict[str, dict]) -> list[dict]:
    rows = []
    for method, res in results.items():
        row = {"method": LABELS.get(method, method), "error": res.get("error")}
        if "tasks" in res:
            for t in TASKS:
                row[t] = _acc(res, t)
                g = gain_over_base(out, method, t)
                row[f"{t}_gain"] = None if g is None else (g["diff"], g["stderr"])
            led = res.get("ledger") or {}
            row["flops"] = led.get("flops", 0.0)
            row["ratio"] = (res.get("budget") or {}).get("ratio")
            stages = res.get("stage_seconds", {})
            row["train_s"] = sum(v for k, v in stages.items() if not k.startswith("eval."))
            prov = res["provenance"]  # a resumed run: its stages' seconds, not this process's
            row["wall_s"] = prov.get("run_seconds", prov.get("wall_seconds"))
        rows.append(row)
    return rows


def _pct(v: tuple | None, signed: bool = False) -> str:
    if v is None:
        return "-"
    val, se = v
    s = f"{100 * val:+.1f}" if signed else f"{100 * val:.1f}"
    return s + (f" ± {100 * se:.1f}" if se is not None else "")


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def render(rows: list[dict], budget: float) -> str:
    """The comparison as a Markdown table (also what the console shows)."""
    head = ("| method | arith acc % | gain vs base | arith_ood acc % | gain vs base | FLOPs | "
            "spent/target | train s | wall s |")
    title = (f"Equal-compute comparison on arith, budget {budget:.3g} FLOPs (greedy; ± = "
             f"bootstrap stderr; gain = paired bootstrap vs base)")
    lines = [title, "", head, "|" + "---|" * 9]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['method']} | failed: {r['error']} ||||||||")
            continue
        lines.append(
            f"| {r['method']} | {_pct(r['arith'])} | {_pct(r['arith_gain'], True)} | "
            f"{_pct(r['arith_ood'])} | {_pct(r['arith_ood_gain'], True)} | "
            f"{r['flops']:.3g} | {_ratio(r.get('ratio'))} | "
            f"{r['train_s']:.0f} | {r['wall_s'] or 0:.0f} |"
        )
    return "\n".join(lines)


def main(
    budget_flops: Annotated[float, typer.Option(help="FLOP target of every method (the toy DAPO run spends ~3.5e11 unforced)")] = 6e11,
    methods: Annotated[str, typer.Option(help="comma-separated methods")] = DEFAULT_METHODS,
    out: Annotated[str, typer.Option(help="parent dir of the runs ({seed}: the seed)")
                   ] = DEFAULT_OUT,
    model: Annotated[str | None, typer.Option(help="reference policy (default: shipped toy)")
                     ] = None,
    eval_limit: Annotated[int | None, typer.Option(help="first N problems per eval task")
                          ] = None,
    seed: Annotated[int, typer.Option(help="seed of every run")] = 0,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="METHOD:key=value config override (repeat)")] = None,
    threads: Annotated[int, typer.Option(help="torch threads")] = 2,
    quiet: Annotated[bool, typer.Option(help="plain logs, no bars")] = False,
) -> None:
    """Train every method at the same FLOP budget on arith and print the comparison."""
    import torch

    from dapo_bench.errors import UserError
    from dapo_bench.io import atomic_write_text
    from dapo_bench.methods import METHODS as REGISTRY
    from dapo_bench.run import RunOptions, resolve_options

    torch.set_num_threads(threads)
    out = Path(str(out).replace("{seed}", str(seed)))
    chosen = [m.strip() for m in methods.split(",") if m.strip()]
    for m in chosen:
        if m != "base" and m not in REGISTRY:
            raise UserError(f"--methods: unknown method {m!r} (known: base, "
                            f"{', '.join(REGISTRY.names())})")
    per: dict[str, list[str]] = {}
    for s in set_ or []:
        name, sep, kv = s.partition(":")
        if not sep or "=" not in kv:
            raise UserError(f"--set {s!r}: expected METHOD:key=value")
        per.setdefault(name, []).append(kv)
    model = model or resolve_options("base", RunOptions(task="arith")).model
    if "base" not in chosen:
        chosen.insert(0, "base")  # the gains are measured against it
    results: dict[str, dict] = {}
    for m in chosen:
        t0 = time.perf_counter()
        print(f"=== {m} ===", file=sys.stderr, flush=True)
        try:
            if m == "base":
                results[m] = run_base(out, model, eval_limit, quiet)
            else:
                results[m] = run_method(m, out, model, budget_flops, eval_limit, seed, quiet,
                                        per.get(m, []))
        except (UserError, RuntimeError, ValueError, OSError) as e:
            results[m] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"}
        print(f"=== {m}: {time.perf_counter() - t0:.0f}s ===", file=sys.stderr, flush=True)
    text = render(table_rows(out, results), budget_flops)
    atomic_write_text(out / "comparison.md", text + "\n")
    print(text)


if __name__ == "__main__":
    run_main(main)
