"""The stages of one DAPO iteration (see ``dapo.py``), each writing its artifact under ``d``.

Every function returns a small summary dict (stored in the stage marker and in results.json)
and charges the tokens it processes to its scope (``ctx.scope(stage)``: the run's ledger under
the stage's name). Generation stages
append to JSONL logs and resume; the others are recomputed from their inputs when rerun.

Token ids are the truth: rollouts and completions keep the ids the model generated; states are
the prompt ids plus a prefix of a rollout's ids cut at a step boundary (``StepSplitter``), the
candidate actions are the first steps of the completions' ids, and the critic, the reference
log-probs and the actor score exactly those ids. Texts are kept beside them for reading only.
Items over a stage's ``max_length`` are counted (``ctx.count``) and reported in results.json.
Every artifact row is read and written through its dataclass in ``rows`` (``State``, ``McRow``,
``AdvantageRow``, ``RefLogprobs``); ``rollouts.jsonl`` through ``Group``.

Not covered: sharing one critic across iterations (each iteration trains its own).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from dapo_bench import dist
from dapo_bench.errors import UserError
from dapo_bench.generation.base import SamplingParams
from dapo_bench.io import atomic_write_json, atomic_write_jsonl, read_json, read_jsonl
from dapo_bench.methods.context import RunContext, Sampled
from dapo_bench.methods.dapo.config import DapoConfig
from dapo_bench.methods.dapo.rows import AdvantageRow, McRow, RefLogprobs, State
from dapo_bench.methods.data import count_infra, load_train_problems
from dapo_bench.methods.scorer import Scorer
from dapo_bench.models import Policy
from dapo_bench.training.rollouts import (
    Request,
    ResumableLog,
    StepSplitter,
    TrainProblem,
    group_from_row,
    make_states,
    sample_groups,
    select_balanced,
)

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from dapo_bench.training.batches import PairBatch


def problems_for(ctx: RunContext, cfg: DapoConfig, k: int) -> tuple[Scorer, list[TrainProblem]]:
    """(scorer, problems) of iteration ``k``: with fresh_problems the k-th slice of the split."""
    from dapo_bench.methods.data import load_train_task

    n = cfg.n_problems
    limit = None if n is None else (n * k if cfg.fresh_problems else n)
    task = load_train_task(ctx, limit)
    probs = load_train_problems(ctx, limit, task=task)
    if n is not None and cfg.fresh_problems:
        probs = probs[n * (k - 1) :]
        if not probs:  # the split is used up: start again from its beginning
            probs = load_train_problems(ctx, n, task=load_train_task(ctx, n))
    return Scorer(task), probs


# iteration k samples with other seeds than iteration 1 (its data must not repeat iteration 1's)
ITERATION_SEED_STRIDE = 104729


def _params(ctx: RunContext, cfg: DapoConfig, scorer: Scorer, salt: int, k: int
            ) -> SamplingParams:
    spec = scorer.task.spec
    return SamplingParams(
        temperature=cfg.temperature, top_p=cfg.top_p,
        max_new_tokens=cfg.max_new_tokens or spec.max_new_tokens, stop=tuple(spec.stop or ()),
        seed=ctx.opts.seed * 7919 + salt + ITERATION_SEED_STRIDE * (k - 1),
    )


def score_batch(ctx: RunContext) -> int:
    """Actions per scoring pass of the actor's data: --micro-batch, else the default."""
    from dapo_bench.methods.dapo.actor import SCORE_BATCH

    return ctx.engine_cfg.micro_batch or SCORE_BATCH


def _until(ctx: RunContext) -> Callable[[], bool] | None:
    """A budget stop for a sampling stage (None without a FLOP target: ranks run free)."""
    from dapo_bench.training import budget

    return None if budget.target(ctx.ledger) is None else ctx.ledger.exhausted


def rollouts(ctx: RunContext, cfg: DapoConfig, policy: Policy, problems: list[TrainProblem],
             scorer: Scorer, d: Path, stage: str, k: int) -> dict:
    gen = ctx.generator(policy)
    chunks: dict = {}
    with ctx.progress("rollouts", len(problems), unit="problems") as adv, \
            ResumableLog(d / "rollouts.jsonl") as log:
        groups = sample_groups(
            gen, [Request.for_problem(p) for p in problems], cfg.n_samples, scorer,
            params=_params(ctx, cfg, scorer, 1, k), chunk_size=cfg.gen_chunk,
            scope=ctx.scope(stage, adv), log=log, shard=True, stats=chunks, until=_until(ctx),
        )
    acc = [sum(g.rewards) / len(g.rewards) for g in groups if g.rewards]
    count_infra(ctx, stage, groups)
    ctx.sampled(Sampled(stage, gen, scorer, len(problems), cfg.n_samples,
                        _params(ctx, cfg, scorer, 1, k),
                        lambda task: load_train_problems(ctx, task=task)))
    return {"chunks": chunks,
        "n_problems": len(groups), "n_responses": sum(len(g.rollouts) for g in groups),
        "accuracy": sum(acc) / max(len(acc), 1),
        "all_correct": sum(a == 1.0 for a in acc), "all_wrong": sum(a == 0.0 for a in acc),
    }


def state_key(problem_id: str, prefix_ids: list[int]) -> str:
    """A state's id: its problem and a hash of its prefix ids (equal prefixes merge)."""
    digest = hashlib.sha256(",".join(map(str, prefix_ids)).encode()).hexdigest()[:12]
    return f"{problem_id}/{digest}"


def states(ctx: RunContext, cfg: DapoConfig, problems: list[TrainProblem], d: Path) -> dict:
    by_id = {p.id: p for p in problems}
    splitter = StepSplitter(ctx.tokenizer)
    out: list[State] = []
    seen, kept, kept_ok, unsolved = set(), 0, 0.0, 0
    rows = read_jsonl(d / "rollouts.jsonl", group_from_row)
    for g in rows:
        p = by_id[g.problem_id]
        if cfg.solved_only and not any(g.passed):
            unsolved += 1  # counted: results.json reports it
            continue
        for i in select_balanced(g.rollouts, cfg.n_rollouts, seed=ctx.opts.seed):
            resp = g.rollouts[i]
            kept += 1
            kept_ok += resp.reward
            if resp.token_ids is None:
                raise UserError(f"{d / 'rollouts.jsonl'}: a response of {p.id} has no "
                                f"token_ids (token ids are the truth)")
            for s in make_states(splitter.split(resp.token_ids)):
                key = state_key(p.id, s["prefix_ids"])
                if key in seen:
                    continue
                seen.add(key)
                out.append(State(key, p.id, p.prompt, tuple(p.prompt_ids),
                                 splitter.text(s["prefix_ids"]), tuple(s["prefix_ids"]), s["t"]))
    if cfg.solved_only and rows and unsolved == len(rows):
        raise UserError(f"{d / 'rollouts.jsonl'}: solved_only, and none of the {len(rows)} "
                        f"problems was solved by any of its {cfg.n_samples} responses: no "
                        f"states to label (raise n_samples, or use a stronger model)")
    atomic_write_jsonl(d / "states.jsonl", (s.to_row() for s in out))
    return {"n_states": len(out), "kept_responses": kept,
            "kept_accuracy": kept_ok / max(kept, 1),
            **({"unsolved_problems": unsolved} if cfg.solved_only else {})}


def mc_labels(ctx: RunContext, cfg: DapoConfig, policy: Policy, scorer: Scorer, d: Path,
              stage: str, k: int) -> dict:
    sts = {s.key: s for s in read_jsonl(d / "states.jsonl", State.from_row)}
    reqs = [Request(key, s.problem_id, s.ids, s.prefix) for key, s in sts.items()]
    gen = ctx.generator(policy)
    chunks: dict = {}
    with ctx.progress("mc labels", len(reqs), unit="states") as adv, \
            ResumableLog(d / "mc.jsonl", "completions") as log:
        groups = sample_groups(
            gen, reqs, cfg.mc_samples, scorer, params=_params(ctx, cfg, scorer, 2, k),
            chunk_size=cfg.gen_chunk, scope=ctx.scope(stage, adv), log=log,
            to_row=lambda r, g: McRow.of(sts[r.key], g).to_row(), shard=True, stats=chunks,
            until=_until(ctx),
        )
    vals = [sum(g.rewards) / len(g.rewards) for g in groups if g.rewards]
    unlabelled = len(reqs) - len(groups)  # left by the budget's data share: counted, not hidden
    if unlabelled:
        ctx.count(stage, {"unlabelled_budget": unlabelled})
    count_infra(ctx, stage, groups)
    return {"chunks": chunks, "n_states": len(groups), "unlabelled_budget": unlabelled, "n_completions": sum(len(g.rollouts) for g in groups),
            "mean_value": sum(vals) / max(len(vals), 1),
            "frac_0": sum(v == 0 for v in vals) / max(len(vals), 1),
            "frac_1": sum(v == 1 for v in vals) / max(len(vals), 1)}


def _heldout(problem_id: str, frac: float) -> bool:
    h = int.from_bytes(hashlib.sha256(problem_id.encode()).digest()[:4], "big") % 10000
    return h < frac * 10000


def _scored(ctx: RunContext, stage: str, items: list, score: Callable[..., list],
            module: torch.nn.Module, *,
            charge: bool = True) -> tuple[list, int]:
    """``score(items, on_batch)`` on every rank's share of ``items`` (``dist.map_shards``),
    gathered in item order; the batches' tokens (summed over ranks) are charged to the ledger
    as inference (unless ``charge``) and their truncations counted. Returns (results, tokens).
    A ZeRO-3 ``module`` needs every rank in each forward: then every rank scores all items."""
    seen = {"tokens": 0, "rows": 0, "context_cut": 0, "response_cut": 0}

    def on_batch(b: PairBatch) -> None:
        seen["tokens"] += b.n_tokens
        for k, v in b.cuts.items():
            seen[k] += v

    keys = sorted(seen)
    if dist.partitioned(module):
        out = score(items, on_batch) if items else []
        total = dict(seen)
    else:
        out = dist.map_shards(items, lambda part: score(part, on_batch) if part else [])
        total = dict(zip(keys, (int(x) for x in dist.all_sum([seen[k] for k in keys]))))
    if charge:
        ctx.scope(stage).charge_inf(total["tokens"])
    ctx.count(stage, {k: v for k, v in total.items() if k != "tokens"})
    return out, total["tokens"]


def critic(ctx: RunContext, cfg: DapoConfig, policy: Policy, d: Path, stage: str) -> dict:
    from dapo_bench.methods.dapo.critic import (
        calibration,
        critic_examples,
        describe_skill,
        score_values,
        train_critic,
    )
    from dapo_bench.models import count_params, load_policy
    from dapo_bench.training.value import ValueModel

    prompts = {s.key: s.prompt_ids for s in read_jsonl(d / "states.jsonl", State.from_row)}
    data = critic_examples(read_jsonl(d / "mc.jsonl", McRow.from_row), prompts,
                           StepSplitter(ctx.tokenizer), step_labels=cfg.critic.step_labels)
    frac = cfg.critic.heldout_frac
    train = [x for x in data if not _heldout(x.problem_id, frac)]
    # the calibration report: held-out problems' MC states (m-sample labels) only
    held = [x for x in data if x.mc_state and _heldout(x.problem_id, frac)]
    # the critic's backbone: a copy of pi_ref in memory (or another model, critic.model)
    lm, tok = (load_policy(cfg.critic.model) if cfg.critic.model
               else (policy.copy_model(), policy.tokenizer))
    vm = ValueModel.from_causal_lm(lm)
    # charged at the critic's own size (a larger backbone via critic.model costs more)
    ctx.ledger.set_params(stage, count_params(vm))
    st = train_critic(vm, tok.pad_token_id, train, cfg.critic, seed=ctx.opts.seed,
                      engine_cfg=ctx.engine_cfg, scope=ctx.scope(stage))
    ctx.count(stage, st.counts)
    preds, _ = _scored(ctx, stage, [x.ids for x in held], lambda part, cb: score_values(
        vm, tok.pad_token_id, part, max_length=cfg.critic.max_length, on_batch=cb), vm)
    vm.save(tok, d / "critic")
    cal = calibration(preds, [x.label for x in held], bins=cfg.critic.bins)
    ctx.log(f"critic skill: {describe_skill(cal)}")
    return {"n_train": len(train), "n_train_mc_states": sum(x.mc_state for x in train),
            "n_heldout": len(held), "heldout": cal,
            "final_loss": st.history[-1]["loss"] if st.history else None,
            "history": st.history}


def advantages(ctx: RunContext, cfg: DapoConfig, d: Path, stage: str) -> dict:
    from dapo_bench.methods.dapo.advantages import (
        VALUE_ESTIMATORS,
        candidates_from_completions,
        state_advantages,
    )
    from dapo_bench.methods.dapo.critic import score_values
    from dapo_bench.models import count_params
    from dapo_bench.training.value import ValueModel

    est = VALUE_ESTIMATORS.entry(cfg.advantage)
    splitter = StepSplitter(ctx.tokenizer)
    sts = {s.key: s for s in read_jsonl(d / "states.jsonl", State.from_row)}
    rows = read_jsonl(d / "mc.jsonl", McRow.from_row)
    cands = [candidates_from_completions(r.completions, splitter) for r in rows]

    def state_ids(r: McRow) -> tuple:
        return sts[r.key].prompt_ids + r.prefix_ids

    need = sorted({state_ids(r) + c.ids for r, cs in zip(rows, cands) for c in cs
                   if not c.terminal})
    vals: dict = {}
    if est.meta.get("needs_critic", True):
        vm, tok = ValueModel.load(d / "critic")
        ctx.ledger.set_params(stage, count_params(vm))
        scores, _ = _scored(ctx, stage, need, lambda part, cb: score_values(
            vm, tok.pad_token_id, part, max_length=cfg.critic.max_length, on_batch=cb), vm)
        vals = dict(zip(need, scores))
    out: list[AdvantageRow] = []
    n_act, n_term = 0, 0
    for r, cs in zip(rows, cands):
        critic_v = [None if c.terminal else vals.get(state_ids(r) + c.ids) for c in cs]
        acts = state_advantages(cs, est.obj(cs, critic_v, cfg.mc_prior), cfg.min_spread)
        if acts is None:
            continue
        n_act += len(acts)
        n_term += sum(a.eos for a in acts)
        s = sts[r.key]
        out.append(AdvantageRow(r.key, r.problem_id, s.prompt, s.prompt_ids, r.prefix,
                                r.prefix_ids, acts))
    if dist.is_main():
        atomic_write_jsonl(d / "advantages.jsonl", (s.to_row() for s in out))
    dist.barrier()
    return {"n_states": len(rows), "kept_states": len(out), "n_actions": n_act,
            "terminal_actions": n_term, "estimator": cfg.advantage,
            "scored_actions": len(vals)}


def _reference(ctx: RunContext, model: PreTrainedModel, tok: PreTrainedTokenizerBase,
               sts: list[AdvantageRow], cfg: DapoConfig,
               d: Path, policy: Policy, stage: str) -> RefLogprobs:
    """log pi_ref of every kept action, cached in ``ref_logprobs.json`` with what it belongs to
    (the advantages file and the policy): a cache of other inputs is recomputed, not reused."""
    from dapo_bench.methods.dapo.actor import reference_logprobs
    from dapo_bench.provenance import hash_bytes, hash_path

    cache = d / "ref_logprobs.json"
    belongs = {"advantages": hash_bytes((d / "advantages.jsonl").read_bytes()),
               "policy": hash_path(policy.path), "max_length": cfg.actor.max_length}
    if cache.is_file():
        ref = RefLogprobs.from_row(read_json(cache))
        if ref.belongs_to == belongs:
            return ref
        ctx.log("actor: cached reference log-probs belong to other inputs; recomputing")
    lps, tokens = _scored(ctx, stage + ".reference", sts, lambda part, cb: reference_logprobs(
        model, tok.pad_token_id, part, max_length=cfg.actor.max_length, on_batch=cb,
        batch_actions=score_batch(ctx)), model, charge=False)
    ref = RefLogprobs(tuple(s.key for s in sts), tuple(map(tuple, lps)), tokens, belongs)
    if dist.is_main():
        atomic_write_json(cache, ref.to_row())
    dist.barrier()
    return ref


def actor(ctx: RunContext, cfg: DapoConfig, policy: Policy, d: Path, stage: str) -> dict:
    from dapo_bench.methods.dapo.actor import dapo_actor_loss, reference_logprobs, train_actor
    sts = read_jsonl(d / "advantages.jsonl", AdvantageRow.from_row)
    model, tok = policy.model, policy.tokenizer  # pi_ref, trained in place into the actor
    ref = _reference(ctx, model, tok, sts, cfg, d, policy, stage)
    ctx.scope(stage).charge_inf(ref.tokens)
    if not sts:
        ctx.log("actor: no state kept by the advantage filter; the policy is unchanged")
        ctx.save_trained(policy, d / "actor")
        return {"steps": 0, "history": []}
    from dapo_bench.training import budget

    acfg = dataclasses.replace(cfg.actor, epochs=int(budget.epochs(ctx.ledger, cfg.actor.epochs)))
    st = train_actor(model, tok.pad_token_id, sts, ref.logprobs, beta=cfg.beta,
                     cfg=acfg, seed=ctx.opts.seed, engine_cfg=ctx.engine_cfg,
                     scope=ctx.scope(stage))
    ctx.count(stage, st.counts)
    ctx.save_trained(policy, d / "actor")
    # a diagnostic after training: the log-ratio of every action against A. It is not part of
    # the method, so its forward passes are not charged to the ledger (its tokens are reported)
    import torch

    after, diag_tokens = _scored(ctx, stage + ".diagnostic", sts, lambda part, cb:
                                 reference_logprobs(model, tok.pad_token_id, part,
                                                    max_length=cfg.actor.max_length,
                                                    on_batch=cb, batch_actions=score_batch(ctx)),
                                 model, charge=False)
    flat = lambda xs: torch.tensor([x for row in xs for x in row])
    adv = torch.tensor([a.adv for s in sts for a in s.actions])
    _, final = dapo_actor_loss(flat(after), flat(ref.logprobs), adv, cfg.beta)
    ctx.log(f"actor: {st.steps} steps; after training loss {final['loss']:.4g}, sign agreement "
            f"{final['sign_agree']:.3f}, mean |log-ratio| {final['abs_log_ratio']:.3f}")
    # the paper's stopping rule (actor.stop_tol > 0): the step it stopped at, or None
    rule = {"stop_step": st.steps if st.stopped == "stop" else None} if acfg.stop_tol else {}
    return {"steps": st.steps, "epochs": round(st.epochs, 3),
            "stopped": {"stop": "converged"}.get(st.stopped, st.stopped or "epochs"),
            "n_states": len(sts), "n_actions": int(adv.numel()),
            "after": final, "diagnostic_tokens_uncharged": diag_tokens,
            "history": st.history, **rule}
