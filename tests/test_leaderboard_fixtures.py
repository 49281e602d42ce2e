"""FIXTURES for the leaderboard tests: small result files written through the real schema.

These are made-up numbers (labelled ``fixture`` in run ids and model names), not measurements;
they exist only to exercise loading, tables, deltas, plots and byte-stable rendering.
"""

from __future__ import annotations

from pathlib import Path

from dapo_bench.ledger import Ledger
from dapo_bench.results import SCHEMA_VERSION, write_results


def _tasks(acc: float, ood: float, n: int = 2000) -> dict:
    def one(v: float, n: int) -> dict:
        return {"version": "1", "hash": "fixture", "prompt_template": "{question}\n",
                "verifier": {"name": "math", "version": "1"}, "n_problems": n,
                "n_samples": n, "generated_tokens": 10 * n,
                "metrics": {"acc": {"value": v, "stderr": round((v * (1 - v) / n) ** 0.5, 6)}}}
    return {"arith": one(acc, n), "arith_ood": one(ood, n // 2)}


def _eval(acc: float, ood: float) -> dict:
    return {"arith": {"value": acc, "stderr": 0.011, "n": 2000},
            "arith_ood": {"value": ood, "stderr": 0.014, "n": 1000}}


def result(method: str, acc: float, ood: float, *, beta: float = 0.05, iterations: int = 0,
           flops_tokens: int = 1000, run_id: str | None = None) -> dict:
    led = Ledger(n_params=660_000)
    for k in range(1, max(iterations, 1) + 1):
        pre = f"it{k}." if iterations else ""
        led.add_inf(pre + "rollouts", flops_tokens * k)
        led.add_train(pre + "actor", flops_tokens // 2)
    obj = {
        "schema_version": SCHEMA_VERSION, "run_id": run_id or f"fixture-{method}",
        "kind": "train", "method": method,
        "model": {"path": "fixture", "hash": "0" * 16, "n_params": 660_000,
                  "name": "fixture-toy"},
        "backend": "hf", "seed": 0,
        "sampling": {"n": 1, "temperature": 0.0, "top_p": 1.0, "max_new_tokens": 64},
        "tasks": _tasks(acc, ood), "ledger": led.to_dict(),
        "config": {"method": method, "preset": "toy", "config": {"beta": beta}},
        "history": [{"step": s, "loss": round(1.0 / (s + 1) + 0.01 * (len(method) % 3), 6)}
                    for s in range(0, 50, 5)] if not iterations else
                   [{"iteration": k, "step": s, "loss": round(0.5 / (s + k), 6)}
                    for k in range(1, iterations + 1) for s in range(1, 30, 4)],
        "evals": {"reference": _eval(0.55, 0.25), "final": _eval(acc, ood),
                  "control": _eval(0.57, 0.26)},
        "provenance": {"git_commit": "fixture0000000000", "packages": {},
                       "started_at": "fixture", "wall_seconds": 100.0 + len(method)},
    }
    if iterations:
        obj["iterations"] = [{"iteration": k, "eval": _eval(acc - 0.02 * (iterations - k),
                                                               ood),
                              "critic": _critic(k)} for k in range(1, iterations + 1)]
        # the shape dapo_bench.training.critic.calibration writes (empty bins have n = 0)
        obj["critic"] = {"n_train": 100, "heldout": {
            "n": 55, "brier": 0.17, "ece": 0.04,
            "bins": [{"lo": 0.0, "hi": 0.5, "n": 0, "mean_pred": None, "mean_label": None}]
            + [{"lo": 0.5, "hi": 1.0, "n": 55, "mean_pred": 0.7, "mean_label": 0.66}]}}
    return obj


def _critic(k: int) -> dict:
    bins = [{"p_mean": (i + 0.5) / 5, "y_mean": min(1.0, (i + 0.5) / 5 + 0.03 * k), "n": 10 + i}
            for i in range(5)]
    return {"brier": 0.2 - 0.01 * k, "ece": 0.05, "bins": bins}


def write_fixture_runs(root: Path) -> Path:
    """An arith-like runs tree under ``root``: main/<method>, beta/<run>, and bad files."""
    main = {"sft": (0.58, 0.27), "rft": (0.6, 0.28), "dpo": (0.57, 0.25),
            "grpo": (0.61, 0.29), "ppo": (0.59, 0.26)}
    for m, (a, o) in main.items():
        write_results(root / "main" / m, result(m, a, o))
    write_results(root / "main" / "dapo", result("dapo", 0.64, 0.31, iterations=2))
    # the committed layout: the base model's own eval run, and DAPO's iterations in iter/
    base = result("base", 0.55, 0.25)
    base.update(kind="eval", ledger=None, history=[])
    del base["evals"]
    write_results(root / "main" / "base", base)
    write_results(root / "iter" / "dapo-it2",
                  result("dapo", 0.64, 0.31, iterations=2, run_id="fixture-dapo-it2"))
    for b, a in ((0.01, 0.60), (0.2, 0.58)):
        write_results(root / "beta" / f"dapo-b{b}",
                      result("dapo", a, 0.3, beta=b, run_id=f"fixture-dapo-b{b}"))
    (root / "main" / "broken").mkdir(parents=True)
    (root / "main" / "broken" / "results.json").write_text('{"schema_version": 1, "run')
    (root / "beta" / "partial").mkdir(parents=True)
    (root / "beta" / "partial" / "results.json").write_text(
        '{"schema_version": 1, "run_id": "p", "kind": "train", "method": "dapo"}')
    return root
