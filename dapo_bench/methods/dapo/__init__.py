"""DAPO (Liu et al., step-level): Direct Advantage Policy Optimization, arXiv 2412.18279.

NOT ByteDance's "DAPO" (decoupled clip and dynamic sampling, arXiv 2503.14476). Offline and
step-level: a critic trained on Monte Carlo values scores candidate next steps, and the actor
regresses each step's log-ratio onto advantage / beta. One iteration, each stage a resumable
artifact under ``runs/<id>/it<k>/``:

1. ``rollouts.jsonl``   pi_ref samples ``n_samples`` responses per training problem (append-only)
2. ``states.jsonl``     ``n_rollouts`` of them kept (balanced correct/wrong), split at ``\\n``
                        into prefix states (identical prefixes of one problem merged)
3. ``mc.jsonl``         ``mc_samples`` completions per state; label = fraction accepted
                        (append-only: a kill resumes without redoing finished states)
4. ``critic/``          LM backbone + scalar head + sigmoid, soft-label BCE; held-out Brier/ECE
5. ``advantages.jsonl`` first steps of the completions as candidate actions, valued by the
                        ``advantage`` estimator (critic V(s+a), or the MC mean of the
                        completions that begin with a), A = v - mean, unique actions,
                        low-spread states dropped
6. ``actor/``           the trained policy (a transformers model dir); ``ref_logprobs.json``
7. with ``iterations`` > 1 the actor becomes pi_ref of the next iteration.
The rows of each file are read and written only through their frozen dataclasses in ``rows``
(``rollouts.jsonl``'s through ``training.rollouts.Group``).
Then ``dapo_bench.run`` evaluates reference, final policy and the equal-compute SFT control.

Not covered: vLLM-specific prefix-cache tuning (the backend's own), multi-node runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dapo_bench.methods.base import MethodOutput, register_method
from dapo_bench.methods.dapo.config import DapoConfig

if TYPE_CHECKING:  # for the checker only: the registration imports no torch (train --help)
    from dapo_bench.methods.context import RunContext
    from dapo_bench.models import Policy

# Toy preset (arith v2, the shipped 47.6k-parameter reference on its SFT plateau, 92.75% on
# test), chosen on the dev split (docs/measurements.md, "Tuning the toy preset"): stage B values
# candidate steps by their own MC completions ("mc"; the critic is still trained and its skill
# reported); beta 0.2 / 0.5 / 1.0 / 2.0 gave 91.4 / 92.2 / 92.4 / 92.5 on dev against the
# reference's 92.3 (within dev's noise, +-0.6, but for 0.2): 1.0, the middle of the flat top;
# n = 4 kept of 8 samples, m = 4.
TOY = {
    "n_problems": 2048, "n_samples": 8, "n_rollouts": 4, "mc_samples": 4, "beta": 1.0,
    "advantage": "mc",
    "critic": {"optim": {"lr": 1e-4}, "epochs": 1, "batch_size": 64, "max_length": 256},
    "actor": {"optim": {"lr": 2e-5}, "epochs": 4, "batch_actions": 64, "max_length": 256},
}
PRESETS = {"default": {}, "toy": TOY}


def summary(results: dict) -> list[str]:
    """What ``dapo-bench train`` prints after the table: the critic's held-out skill."""
    from dapo_bench.methods.dapo.critic import describe_skill

    heldout = (results.get("critic") or {}).get("heldout")
    return ["critic " + describe_skill(heldout)] if heldout else []


@register_method(
    "dapo", config=DapoConfig, presets=PRESETS, summary=summary,
    flags=("beta", "n_rollouts", "mc_samples", "iterations"),  # train's DAPO flags; others refuse
    help="DAPO (Liu et al., step-level): offline, MC-labelled critic, A/beta log-ratio "
         "regression (arXiv 2412.18279; not ByteDance's DAPO)",
)
def train_dapo(ctx: RunContext, cfg: DapoConfig) -> MethodOutput:
    from dapo_bench.ledger import BudgetExhausted
    from dapo_bench.methods.evaluate import eval_policy

    policy = ctx.policy(ctx.reference)  # a handle: each stage takes the model it holds
    out = MethodOutput(model_dir=policy.path)
    for k in range(1, cfg.iterations + 1):
        try:
            ctx.ledger.check_budget()
            it = _iteration(ctx, cfg, k, policy)
        except BudgetExhausted as e:
            ctx.log(f"iteration {k}: {e}; stopping")
            break
        policy = ctx.policy(it["actor_dir"])  # the trained actor, in memory when just trained
        label = "final" if k == cfg.iterations else f"it{k}"
        it["eval"] = eval_policy(ctx, policy, label)
        out.iterations.append(it)
        out.history.extend({"iteration": k, **h} for h in it.pop("actor_history"))
        out.model_dir = policy.path
    if out.iterations:
        out.extra["critic"] = out.iterations[-1]["critic"]
    return out


def _iteration(ctx: RunContext, cfg: DapoConfig, k: int, policy: Policy) -> dict:
    from dapo_bench.methods.dapo import stages as st
    from dapo_bench.training import budget

    d = ctx.run_dir / f"it{k}"
    d.mkdir(parents=True, exist_ok=True)
    p = f"it{k}."
    # with a FLOP target: iteration k spends up to k/K of it, its sampling a data_frac share
    led, part = ctx.ledger, 1.0 / cfg.iterations
    data_upto = budget.share(led, (k - 1) * part * (budget.target(led) or 0), cfg.data_frac * part)
    scorer, problems = st.problems_for(ctx, cfg, k)
    try:
        info: dict[str, Any] = {"iteration": k, "reference": policy.path}
        with budget.phase(led, data_upto):
            info["rollouts"] = ctx.run_stage(p + "rollouts", lambda: st.rollouts(
                ctx, cfg, policy, problems, scorer, d, p + "rollouts", k), every_rank=True)
            info["states"] = ctx.run_stage(p + "states", lambda: st.states(
                ctx, cfg, problems, d))
            info["mc"] = ctx.run_stage(p + "mc", lambda: st.mc_labels(
                ctx, cfg, policy, scorer, d, p + "mc", k), every_rank=True)
    finally:
        scorer.close()
    with budget.phase(led, budget.share(led, 0.0, k * part)):
        info["critic"] = ctx.run_stage(p + "critic", lambda: st.critic(
            ctx, cfg, policy, d, p + "critic"), every_rank=True)
        info["advantages"] = ctx.run_stage(p + "advantages", lambda: st.advantages(
            ctx, cfg, d, p + "advantages"), every_rank=True)
        actor = ctx.run_stage(p + "actor", lambda: st.actor(ctx, cfg, policy, d, p + "actor"),
                              every_rank=True)
    info["actor"] = {kk: v for kk, v in actor.items() if kk != "history"}
    info["actor_history"] = actor.get("history", [])
    info["actor_dir"] = str(d / "actor")
    return info

