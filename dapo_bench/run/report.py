"""The equal-compute control and the training run's ``results.json``.

- :func:`run_control` gives the REFERENCE policy the same FLOPs as the method's training (plain
  SFT on the training problems' gold solutions, ``dapo_bench.training.sft``) and saves it as
  ``<run>/control``: a gain that this control matches is not to the method's credit.
- :func:`train_results` writes the run's ``results.json`` (through ``results.build_results``, the
  builder eval uses too): the final policy's task metrics, the ledger, config, history,
  iterations, per-stage wall times, and for each eval task the reference / control / final
  accuracies with paired-bootstrap gains (``comparison``).
- :func:`summary_lines`: what ``dapo-bench train`` prints after its table (the budget, the
  canaries, and the method's own ``summary``).

Not covered: sampled (n > 1) evaluation of training runs; controls other than SFT.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from dapo_bench import dist
from dapo_bench.io import read_json
from dapo_bench.ledger import Ledger
from dapo_bench.methods.canaries import summary as canary_summary
from dapo_bench.methods.context import RunContext
from dapo_bench.methods.evaluate import eval_policy, train_problem_solutions
from dapo_bench.results import build_results, now_utc, write_results
from dapo_bench.training.scope import Scope


def run_control(ctx: RunContext, ref_dir: str, flops: float) -> str:
    """SFT of the reference on gold solutions until ``flops`` are spent; returns its dir."""
    out = ctx.run_dir / "control"

    def work() -> dict:
        from dapo_bench.training.engine import OptimConfig
        from dapo_bench.training.sft import SFTConfig, train_sft

        pairs = train_problem_solutions(ctx)
        policy = ctx.policy(ref_dir)
        model, tok = policy.model, policy.tokenizer
        from dapo_bench.training import budget

        led = Ledger(n_params=ctx.ledger.n_params, budget_flops=flops)
        cfg = SFTConfig(epochs=budget.epochs(led, 1.0), batch_size=ctx.opts.control_batch_size,
                        seed=ctx.opts.seed, optim=OptimConfig(lr=ctx.opts.control_lr))
        stats = train_sft(model, tok, pairs, cfg, scope=Scope("control", led),
                          engine_cfg=ctx.engine_cfg)
        ctx.count("control.sft", stats.counts)
        ctx.save_trained(policy, out)
        return {"flops": led.total_flops, "target_flops": flops, "steps": stats.steps,
                "epochs": stats.epochs, "loss": stats.loss, "n_pairs": len(pairs)}

    info = ctx.run_stage("control.sft", work, every_rank=True)
    ctx.log(f"control: {info['steps']} SFT steps, {info['epochs']:.2f} epochs, "
            f"{info['flops']:.3g} FLOPs (target {info['target_flops']:.3g})")
    return str(out)


def _compare(ctx: RunContext, label_a: str, label_b: str) -> dict:
    from dapo_bench.eval.store import compare_runs

    return {t: compare_runs(ctx.run_dir / "eval" / label_a, ctx.run_dir / "eval" / label_b, t)
            for t in ctx.opts.eval_tasks}


def train_results(ctx: RunContext, spec: Any, saved: dict, out: Any, t0: float,
                  train_data: dict | None = None) -> dict:
    """Evaluate reference, final policy and control; write and return ``results.json``:
    besides the schema's fields, ``train_data`` (which task and split trained, checked
    disjoint from the eval tasks), ``counts`` (per stage: rows scored, contexts and
    responses cut to a ``max_length``, rollouts masked for an infrastructure error; nothing is
    truncated or dropped silently) and, with ``--canaries``, ``canaries``
    (``methods.canaries.summary``)."""
    from dapo_bench.provenance import hash_path
    from dapo_bench.training import budget

    started = now_utc()
    train_flops = ctx.ledger.total_flops
    budget_info = budget.report(ctx.ledger, budget.how_of(out))
    if budget_info is not None:
        ctx.log(budget.describe(budget_info))
    ref = ctx.reference
    evals = {"reference": eval_policy(ctx, ref, "reference"),
             "final": eval_policy(ctx, out.model_dir, "final")}
    comparison: dict[str, Any] = {"final_vs_reference": _compare(ctx, "reference", "final")}
    control_info = None
    if ctx.opts.control:
        cdir = run_control(ctx, ref, train_flops)
        evals["control"] = eval_policy(ctx, cdir, "control")
        comparison["control_vs_reference"] = _compare(ctx, "reference", "control")
        comparison["final_vs_control"] = _compare(ctx, "control", "final")
        control_info = read_json(ctx.run_dir / "stages" / "control.sft.json")["info"]
    final_res = read_json(ctx.run_dir / "eval" / "final" / "results.json")
    results = build_results(
        run_id=ctx.run_dir.name, kind="train", method=spec.name,
        model={"path": str(out.model_dir), "hash": hash_path(out.model_dir),
               "n_params": ctx.ledger.n_params, "name": Path(out.model_dir).name,
               "reference": str(ref), "reference_hash": _hash_or_none(ref)},
        backend=ctx.opts.backend, seed=ctx.opts.seed, sampling=final_res.get("sampling"),
        tasks=final_res["tasks"], config=saved, started_at=started,
        wall_seconds=time.perf_counter() - t0, ledger=ctx.ledger.to_dict(),
        # the whole run's time over all its processes (a resumed run's skipped stages count
        # the seconds they took when they ran)
        run_seconds=sum(ctx.stage_seconds.values()),
        history=out.history, iterations=out.iterations, **out.extra, evals=evals,
        comparison=comparison, control=control_info, train_data=train_data,
        counts=ctx.counts, budget=budget_info,
        stage_seconds={k: round(v, 2) for k, v in ctx.stage_seconds.items()},
        **({"canaries": canary_summary(ctx.run_dir / "canaries.jsonl", ctx.opts.canaries)}
           if ctx.opts.canaries else {}),
    )
    if dist.is_main():
        write_results(ctx.run_dir, results)
    return results


def _hash_or_none(path: str) -> str | None:
    from dapo_bench.provenance import hash_path

    return hash_path(path) if Path(path).exists() else None


def summary_lines(results: dict) -> list[str]:
    """Plain lines about a finished run: how the FLOP budget was reached, then the method's
    own ``summary`` (e.g. DAPO's critic skill)."""
    from dapo_bench.methods import METHODS
    from dapo_bench.training.budget import describe

    lines = [describe(results["budget"])] if results.get("budget") is not None else []
    c = results.get("canaries")
    if c is not None:
        lines.append(f"canaries: {c['rewarded']} of {c['n']} canary responses rewarded (cheat "
                     f"rate {c['cheat_rate']:.4f}, {c['items']} canary prompts, "
                     f"{c['infra_errors']} infrastructure errors)")
    spec = METHODS.get(results["method"])
    return lines + (spec.summary(results) if spec.summary else [])
