"""Equal compute: ``--budget-flops F`` is a TARGET every method reaches (within ``TOLERANCE``).

The compute ledger (``dapo_bench.ledger``) is the measure: FLOPs = 2 N (N_inf + 3 N_train) over
every stage of the method's training (evaluation is not charged). The one training loop and
the rollout path stop when the ledger reaches the budget (``Ledger.exhausted``), so a method
never overshoots F by more than one optimizer step or one generation chunk. What this module
adds is the other half: a method that would stop EARLY keeps going. Every method takes its
limits from here, so the rule lives in one place:

- :func:`epochs` / :func:`steps`: with a target, a configured number of epochs (SFT, RFT, DPO,
  DAPO's actor, the control) or online steps (GRPO, PPO) is no limit; the budget stops it.
  Without one, the configured value is the limit, as before.
- :func:`problems`: with a target, an offline sampling stage (RFT's and DPO's rollouts) is not
  limited to ``n_problems``: it walks on through the training split, in its order, until its
  share of the budget is spent (so the first ``n_problems`` are the ones it would have used).
- :func:`phase`: a stage that may spend only part of the budget (sampling in RFT/DPO, the data
  stages of DAPO, one of several DAPO iterations) runs inside ``with phase(ledger, upto):``,
  which lowers the ledger's stop to ``upto`` FLOPs for that stage.
- :func:`report`: what ``results.json`` says (``budget``): target, spent, spent / target,
  whether it is within ``TOLERANCE``, and how the method got there (epochs, steps, problems,
  why it stopped). A run that misses the target says so (``reached: false``) and the CLI prints
  a warning; nothing is hidden.

Not covered: learning-rate schedules that need the step count in advance (cosine) under a
target: the toy and paper presets of the methods use constant rates; a cosine schedule under a
target decays over the configured epochs and then stays at its floor.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from dapo_bench.ledger import Ledger

TOLERANCE = 0.05  # a method's spent FLOPs must be within 5% of the target
UNBOUNDED_EPOCHS = 1e6  # "until the budget stops it" (the loop stops long before)
UNBOUNDED_STEPS = 10**9


def target(ledger: Ledger) -> float | None:
    """The FLOP target of the run (None: no budget, methods run their configured length)."""
    return ledger.budget_flops


def epochs(ledger: Ledger, configured: float) -> float:
    """Epochs a trainer may run: the configured number, or with a target as many as reaching
    it takes."""
    return configured if target(ledger) is None else UNBOUNDED_EPOCHS


def steps(ledger: Ledger, configured: int) -> int:
    """Online steps a method may run: the configured number, or with a target unbounded."""
    return configured if target(ledger) is None else UNBOUNDED_STEPS


def problems(ledger: Ledger, configured: int | None) -> int | None:
    """Training problems an offline sampling stage draws from (None: the whole split)."""
    return configured if target(ledger) is None else None


@contextlib.contextmanager
def phase(ledger: Ledger, upto: float | None) -> Iterator[None]:
    """Inside the block the ledger counts as exhausted at ``upto`` FLOPs (if lower than its
    budget); the budget is restored after. ``upto`` None: no change."""
    old = ledger.budget_flops
    if upto is not None and old is not None:
        ledger.budget_flops = min(old, upto)
    try:
        yield
    finally:
        ledger.budget_flops = old


def share(ledger: Ledger, start: float, frac: float) -> float | None:
    """``start`` (FLOPs already assigned) plus ``frac`` of the budget; None without a budget."""
    f = target(ledger)
    return None if f is None else start + frac * f


def report(ledger: Ledger, how: dict | None = None) -> dict | None:
    """``results.json``'s ``budget``: target, spent, ratio, reached (within TOLERANCE), how."""
    f = target(ledger)
    if f is None:
        return None
    spent = ledger.total_flops
    ratio = spent / f
    return {"target_flops": f, "spent_flops": spent, "ratio": round(ratio, 4),
            "tolerance": TOLERANCE, "reached": abs(ratio - 1.0) <= TOLERANCE,
            "how": how or {}}


# what a method's train-stage info says about how it spent its compute
HOW_KEYS = ("problems_sampled", "pairs", "responses_sampled", "steps", "epochs", "stopped")


def how_of(out: Any) -> dict:
    """How a method's output (``MethodOutput``) reached its FLOPs: epochs, steps, problems,
    why it stopped (the train stage's info; DAPO: summed over iterations, per-iteration actor
    epochs)."""
    info = out.extra.get("train_info")
    if info:
        return {k: info[k] for k in HOW_KEYS if k in info}
    its = out.iterations
    if not its:
        return {}
    return {"iterations": len(its),
            "problems_sampled": sum(it["rollouts"].get("n_problems", 0) for it in its),
            "states_labelled": sum(it["mc"].get("n_states", 0) for it in its),
            "unlabelled_budget": sum(it["mc"].get("unlabelled_budget", 0) for it in its),
            "actor_steps": sum(it["actor"].get("steps", 0) for it in its),
            "actor_epochs": "/".join(str(it["actor"].get("epochs", "-")) for it in its),
            "stopped": its[-1]["actor"].get("stopped", "")}


def describe(rep: dict | None) -> str:
    """One line for logs and the CLI: ``budget 9e+12: spent 9.02e+12 (100.2%), ...``."""
    if rep is None:
        return "no FLOP budget (each method ran its configured length)"
    how = ", ".join(f"{k} {_fmt(v)}" for k, v in rep["how"].items())
    flag = "" if rep["reached"] else f" NOT within {rep['tolerance']:.0%} of the target"
    return (f"budget {rep['target_flops']:.3g} FLOPs: spent {rep['spent_flops']:.3g} "
            f"({100 * rep['ratio']:.1f}%){flag}" + (f"; {how}" if how else ""))


def _fmt(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)
