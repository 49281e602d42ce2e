"""FIXTURES for the leaderboard tests: small result files written through the real schema.

These are made-up numbers (labelled ``fixture`` in run ids and model names), not measurements;
they exist only to exercise loading, tables, seeds, deltas, plots and byte-stable rendering.
The tree is the layout of ``leaderboards/arith.yaml``:

    seeds/s<seed>/<method>/results.json   base (seed 0, an eval run), sft, rft, dpo, grpo, ppo,
                                          dapo and dapo_critic (dapo with advantage: critic)
    beta/s<seed>/beta<b>/results.json     dapo at other betas
    iter/s<seed>/it2/results.json         two dapo iterations (cumulative ledger stages)
    critic/<setting>/results.json         critic study (critic.heldout skill and calibration)
    default/dapo/results.json             the default run (critic.heldout with its bins)

plus a broken file (invalid JSON) and a partial one (fields missing) where the globs find them.
The paired gains in ``comparison`` are deliberately NOT the accuracy change to the base, so a
test can tell a gain cell from a delta.
"""

from __future__ import annotations

from pathlib import Path

from dapo_bench.ledger import Ledger
from dapo_bench.results import SCHEMA_VERSION, write_results

N_PARAMS = 660_000
TARGET = 3.3e9  # the fixture's FLOP target: 1000 tokens per iteration reach it exactly
BASE = (0.55, 0.25)  # seeds/s0/base: (arith, arith_ood)
# seeds/s<seed>/<run>: {seed: (arith, arith_ood, (gain ID, se), (gain OOD, se), tokens)}
SEEDS = {
    "sft": {0: (0.600, 0.270, (0.050, 0.008), (0.020, 0.012), 1000),
            1: (0.620, 0.280, (0.070, 0.009), (0.030, 0.013), 1040),
            2: (0.610, 0.260, (0.060, 0.008), (0.010, 0.012), 1020)},
    "rft": {0: (0.580, 0.260, (0.030, 0.006), (0.010, 0.010), 1000)},
    "dpo": {0: (0.570, 0.250, (0.020, 0.006), (0.000, 0.010), 980)},
    "grpo": {0: (0.620, 0.290, (0.072, 0.008), (0.040, 0.011), 1010)},
    "ppo": {0: (0.615, 0.280, (0.064, 0.007), (0.030, 0.011), 1000),
            1: (0.625, 0.300, (0.068, 0.008), (0.046, 0.012), 1030)},
    "dapo": {0: (0.640, 0.310, (0.020, 0.006), (0.015, 0.009), 1000),
             1: (0.610, 0.290, (0.010, 0.005), (0.005, 0.010), 1020),
             2: (0.655, 0.320, (0.030, 0.007), (0.025, 0.011), 1060)},
    "dapo_critic": {0: (0.630, 0.300, (0.012, 0.006), (0.010, 0.010), 1100),
                    1: (0.600, 0.280, (0.004, 0.005), (0.002, 0.010), 1060)},
}
# beta/s<seed>/beta<b>: {(seed, beta): the SEEDS tuple}; the seeds' dapo runs are beta 1.0
BETA = {(0, 0.5): (0.600, 0.280, (0.014, 0.006), (0.006, 0.009), 1000),
        (1, 0.5): (0.580, 0.260, (0.008, 0.005), (0.002, 0.010), 1000),
        (0, 2.0): (0.620, 0.300, (0.018, 0.006), (0.012, 0.009), 1000),
        (1, 2.0): (0.634, 0.310, (0.024, 0.006), (0.016, 0.010), 1040),
        (0, 10.0): (0.560, 0.240, (-0.004, 0.005), (-0.010, 0.009), 1000)}
# iter/s<seed>/it2: {seed: (arith, arith_ood, tokens per iteration)}; iteration 1 is 2 points
# (ID) and 1 point (OOD) below the final accuracy
ITER = {0: (0.660, 0.320, 1000), 1: (0.640, 0.300, 1200)}
# critic/<setting> and default/dapo: (brier, brier_constant, ece, (gain ID, se),
# (gain OOD, se), tokens); critic/c1x-e4-step has no file (a missing row)
CRITIC = {
    "default/dapo": (0.1384, 0.1411, 0.145, (0.004, 0.004), (0.009, 0.008), 1000),
    "critic/c1x": (0.1450, 0.1411, 0.160, (-0.002, 0.004), (0.001, 0.008), 1000),
    "critic/c4x": (0.1250, 0.1411, 0.070, (0.011, 0.004), (0.008, 0.008), 1300),
    "critic/c4x-e4-step": (0.1200, 0.1411, 0.060, (0.009, 0.004), (0.016, 0.008), 1600),
}
KEPT = {"default/dapo": 1342, "critic/c1x": 5, "critic/c4x": 18, "critic/c4x-e4-step": 93}
# default/dapo's non-empty reliability bins (of 10): {bin: (n, mean_pred, mean_label)}
BINS = {3: (58, 0.375, 0.362), 4: (60, 0.439, 0.483), 7: (694, 0.716, 0.893)}


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


def heldout(brier: float, brier_constant: float, ece: float,
            filled: dict[int, tuple[int, float, float]]) -> dict:
    """``critic.heldout`` as dapo_bench.methods.dapo.critic.calibration writes it: 10
    equal-width bins, the empty ones with n = 0."""
    bins = [{"lo": b / 10, "hi": (b + 1) / 10, "n": 0, "mean_pred": None, "mean_label": None}
            for b in range(10)]
    for b, (n, p, y) in filled.items():
        bins[b].update(n=n, mean_pred=p, mean_label=y)
    return {"n": sum(b["n"] for b in bins), "brier": brier, "brier_constant": brier_constant,
            "brier_skill": 1.0 - brier / brier_constant, "ece": ece,
            "binning": "10 equal-width bins (fixture)", "bins": bins}


def md_row(md: str, label: str) -> list[str]:
    """The cells after the label of the Markdown table row labelled ``label`` (the first such)."""
    line = next(x for x in md.splitlines() if x.startswith(f"| {label} |"))
    return [c.strip() for c in line.strip("|").split("|")][1:]


def result(method: str, acc: float, ood: float, *, kind: str = "train", seed: int = 0,
           beta: float = 1.0, advantage: str = "mc", iterations: int = 0,
           flops_tokens: int = 1000, run_id: str | None = None,
           gains: dict | None = None, critic: dict | None = None) -> dict:
    """One results object. ``gains``: {task: (diff, stderr)} as fractions, written as
    ``comparison.final_vs_reference``; ``critic``: a ``critic.heldout`` block. A run with
    ``iterations`` charges ``flops_tokens`` per iteration to ledger stages it<k>.*."""
    led = Ledger(n_params=N_PARAMS)
    for k in range(1, max(iterations, 1) + 1):
        pre = f"it{k}." if iterations else ""
        led.add_inf(pre + "rollouts", flops_tokens)
        led.add_train(pre + "actor", flops_tokens // 2)
    config = {"beta": beta, **({"advantage": advantage} if method == "dapo" else {})}
    obj = {
        "schema_version": SCHEMA_VERSION, "run_id": run_id or f"fixture-{method}",
        "kind": kind, "method": method,
        "model": {"path": "fixture", "hash": "0" * 16, "n_params": N_PARAMS,
                  "name": "fixture-toy"},
        "backend": "hf", "seed": seed,
        "sampling": {"n": 1, "temperature": 0.0, "top_p": 1.0, "max_new_tokens": 64},
        "tasks": _tasks(acc, ood), "ledger": led.to_dict(),
        "config": {"method": method, "preset": "toy", "config": config},
        "history": [{"step": s, "loss": round(1.0 / (s + 1) + 0.01 * (len(method) % 3), 6)}
                    for s in range(0, 50, 5)] if not iterations else
                   [{"iteration": k, "step": s, "loss": round(0.5 / (s + k), 6)}
                    for k in range(1, iterations + 1) for s in range(1, 30, 4)],
        "evals": {"reference": _eval(*BASE), "final": _eval(acc, ood),
                  "control": _eval(0.57, 0.26)},
        "budget": {"target_flops": TARGET, "spent_flops": led.total_flops,
                   "ratio": round(led.total_flops / TARGET, 4)},
        "provenance": {"git_commit": "fixture0000000000", "packages": {},
                       "started_at": "fixture", "wall_seconds": 100.0 + len(method)},
    }
    if kind == "eval":
        obj.update(ledger=None, history=[], budget=None)
        del obj["evals"]
    if gains:
        obj["comparison"] = {"final_vs_reference": {
            t: {"diff": d, "stderr": se, "n": obj["tasks"][t]["n_problems"]}
            for t, (d, se) in gains.items()}}
    if critic:
        obj["critic"] = {"n_train": 100, "heldout": critic}
    if iterations:
        obj["iterations"] = [{"iteration": k, "eval": _eval(acc - 0.02 * (iterations - k),
                                                           ood - 0.01 * (iterations - k))}
                             for k in range(1, iterations + 1)]
    return obj


def write_fixture_runs(root: Path) -> Path:
    """The arith spec's runs tree under ``root`` (see the module docstring)."""
    write_results(root / "seeds/s0/base",
                  result("base", *BASE, kind="eval", run_id="fixture-s0-base"))
    for name, seeds in SEEDS.items():
        for s, (a, o, g, go, tok) in seeds.items():
            write_results(root / f"seeds/s{s}/{name}", result(
                "dapo" if name.startswith("dapo") else name, a, o, seed=s,
                advantage="critic" if name == "dapo_critic" else "mc", flops_tokens=tok,
                gains={"arith": g, "arith_ood": go}, run_id=f"fixture-s{s}-{name}"))
    for (s, b), (a, o, g, go, tok) in BETA.items():
        write_results(root / f"beta/s{s}/beta{b}", result(
            "dapo", a, o, seed=s, beta=b, flops_tokens=tok, gains={"arith": g, "arith_ood": go},
            run_id=f"fixture-s{s}-beta{b}"))
    for s, (a, o, tok) in ITER.items():
        write_results(root / f"iter/s{s}/it2", result(
            "dapo", a, o, seed=s, iterations=2, flops_tokens=tok, run_id=f"fixture-s{s}-it2"))
    for path, (brier, const, ece, g, go, tok) in CRITIC.items():
        obj = result(
            "dapo", 0.6, 0.3, advantage="mc" if path.startswith("default") else "critic",
            flops_tokens=tok, gains={"arith": g, "arith_ood": go},
            critic=heldout(brier, const, ece, BINS if path == "default/dapo" else {}),
            run_id="fixture-" + path.replace("/", "-"))
        # one iteration's record, as DAPO writes it: the actor's states (a list-indexed field)
        obj["iterations"] = [{"iteration": 1, "advantages": {"kept_states": KEPT[path]}}]
        write_results(root / path, obj)
    (root / "seeds/s1/broken").mkdir(parents=True)
    (root / "seeds/s1/broken/results.json").write_text('{"schema_version": 1, "run')
    (root / "critic/partial").mkdir(parents=True)
    (root / "critic/partial/results.json").write_text(
        '{"schema_version": 1, "run_id": "p", "kind": "train", "method": "dapo"}')
    return root
