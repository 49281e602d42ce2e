"""``rft``: rejection-sampling fine-tuning (Yuan et al. 2023) on the policy's own correct samples.

Stage ``rollouts``: the reference policy samples ``samples_per_prompt`` responses per training
problem and the verifier scores them (saved to ``<run>/rollouts.jsonl``; DPO reuses this stage's
code). Stage ``train``: plain SFT (``dapo_bench.training.sft``) on up to ``max_per_prompt``
distinct verified-correct responses per problem. What it optimises: the likelihood of the
policy's own successful solutions, i.e. a filtered behaviour-cloning step.

With ``--budget-flops``, sampling stops once it has spent ``rollout_frac`` of the budget (so the
rest is left for training) and training stops when the whole budget is spent.

Not covered: several rounds of sampling (iterated RFT), sampling from other models, dedup by
equation content (distinct texts only).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from dapo_bench.generation.base import SamplingParams
from dapo_bench.io import atomic_write_jsonl, read_jsonl
from dapo_bench.methods.base import MethodOutput, register_method
from dapo_bench.methods.baseline_run import arith_toy, train_stage, with_run_optim
from dapo_bench.training.baseline_common import Group, sample_groups
from dapo_bench.training.common import OptimConfig, load_policy, save_policy
from dapo_bench.training.dpo_loss import select_correct
from dapo_bench.training.rollouts import TrainProblem
from dapo_bench.training.sft import SFTConfig, train_sft


@dataclass(frozen=True)
class RFTConfig:
    """RFT settings.

    n_problems: training problems to sample on (None = all); samples_per_prompt: responses
    sampled per problem; temperature, top_p, max_new_tokens: sampling; max_per_prompt: distinct
    correct responses kept per problem; rollout_frac: share of a FLOP budget that sampling may
    spend; sft: the fine-tuning settings (epochs, batch_size, optim.lr, ...).
    """

    n_problems: int | None = None
    samples_per_prompt: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 1024
    max_per_prompt: int = 4
    rollout_frac: float = 0.5
    sft: SFTConfig = field(default_factory=lambda: SFTConfig(
        epochs=3.0, batch_size=64, max_length=2048, optim=OptimConfig(lr=1e-5)))


PRESETS: dict[str, dict] = {
    "default": {},
    "toy": {
        "n_problems": 1000, "samples_per_prompt": 4, "max_new_tokens": 128,
        "sft": {"epochs": 3.0, "batch_size": 64, "max_length": 256, "optim": {"lr": 1e-4}},
    },
}


def group_to_row(g: Group) -> dict:
    p = g.problem
    return {"problem_id": p.id, "prompt": p.prompt, "gold": p.gold, "texts": g.texts,
            "rewards": g.rewards, "stopped": g.stopped}


def row_to_group(r: dict) -> Group:
    return Group(TrainProblem(r["problem_id"], r["prompt"], r["gold"]), r["texts"],
                 r["rewards"], r["stopped"])


def rollout_stage(ctx: Any, cfg: Any) -> list[Group]:
    """Stage ``rollouts``: sample and score on the reference policy; ``<run>/rollouts.jsonl``.

    ``cfg`` needs n_problems, samples_per_prompt, temperature, top_p, max_new_tokens and
    rollout_frac (RFT's and DPO's configs both have them).
    """
    from dapo_bench.methods.data import Scorer, load_train_problems, load_train_task

    path = ctx.run_dir / "rollouts.jsonl"

    def work() -> dict:
        problems = load_train_problems(ctx, limit=cfg.n_problems)
        scorer = Scorer(load_train_task(ctx, limit=cfg.n_problems))
        cap = None
        if ctx.ledger.budget_flops is not None:
            cap = cfg.rollout_frac * ctx.ledger.budget_flops / (2.0 * ctx.ledger.n_params)
        params = SamplingParams(n=cfg.samples_per_prompt, temperature=cfg.temperature,
                                top_p=cfg.top_p, max_new_tokens=cfg.max_new_tokens,
                                seed=ctx.opts.seed)
        try:
            with ctx.progress("rollouts (problems)", len(problems)) as advance:
                groups = sample_groups(ctx.generator(ctx.opts.model), problems,
                                       cfg.samples_per_prompt, scorer, params,
                                       ledger=ctx.ledger, stage="rollouts",
                                       max_inf_tokens=cap, progress=advance)
        finally:
            scorer.close()
        atomic_write_jsonl(path, [group_to_row(g) for g in groups])
        n = sum(len(g.texts) for g in groups)
        acc = sum(sum(g.passed) for g in groups) / max(n, 1)
        return {"problems": len(groups), "samples": n, "sample_acc": acc}

    info = ctx.run_stage("rollouts", work)
    ctx.log(f"rollouts: {info['problems']} problems, {info['samples']} samples, "
            f"accuracy {info['sample_acc']:.3f}")
    return [row_to_group(r) for r in read_jsonl(path)]


def as_groups(groups: list[Group]) -> list[tuple[str, list[str], list[bool]]]:
    return [(g.problem.prompt, g.texts, g.passed) for g in groups]


@register_method(
    "rft", config=RFTConfig, presets=PRESETS, default_preset=arith_toy,
    help="RFT: fine-tune on the policy's own verified-correct samples",
)
def run_rft(ctx: Any, cfg: RFTConfig) -> MethodOutput:
    groups = rollout_stage(ctx, cfg)
    out_dir = ctx.run_dir / "policy"
    sft_cfg = dataclasses.replace(cfg.sft, seed=ctx.opts.seed,
                                  optim=with_run_optim(ctx, cfg.sft.optim))

    def work() -> dict:
        pairs = select_correct(as_groups(groups), max_per_prompt=cfg.max_per_prompt)
        model, tok = load_policy(ctx.opts.model)
        if pairs:
            stats = train_sft(model, tok, pairs, sft_cfg, ledger=ctx.ledger, stage="train")
            history, steps, stopped = stats.history, stats.steps, stats.stopped
        else:
            ctx.log("rft: no correct sample to train on; the policy is unchanged")
            history, steps, stopped = [], 0, "no data"
        save_policy(model, tok, out_dir)
        return {"pairs": len(pairs), "steps": steps, "stopped": stopped, "history": history}

    return train_stage(ctx, work, out_dir)
