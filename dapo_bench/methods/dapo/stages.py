"""The stages of one DAPO iteration (see ``dapo.py``), each writing its artifact under ``d``.

Every function returns a small summary dict (stored in the stage marker and in results.json)
and adds the tokens it processes to the run's ledger under its stage name. Generation stages
append to JSONL logs and resume; the others are recomputed from their inputs when rerun.

Not covered: sharing one critic across iterations (each iteration trains its own).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from dapo_bench.generation.base import SamplingParams
from dapo_bench.io import atomic_write_json, atomic_write_jsonl, read_json, read_jsonl
from dapo_bench.training.rollouts import (
    Request,
    ResumableLog,
    make_states,
    sample_groups,
    select_balanced,
)


def problems_for(ctx: Any, cfg: Any, k: int, policy: str) -> tuple[Any, list]:
    """(scorer, problems) of iteration ``k``: with fresh_problems the k-th slice of the split."""
    from transformers import AutoTokenizer

    from dapo_bench.methods.data import Scorer, load_train_problems, load_train_task

    n = cfg.n_problems
    limit = None if n is None else (n * k if cfg.fresh_problems else n)
    task = load_train_task(ctx, limit)
    probs = load_train_problems(ctx, limit, AutoTokenizer.from_pretrained(policy), task=task)
    if n is not None and cfg.fresh_problems:
        probs = probs[n * (k - 1) :]
        if not probs:
            probs = load_train_problems(ctx, n, task=load_train_task(ctx, n))
    return Scorer(task), probs


def _params(ctx: Any, cfg: Any, scorer: Any, salt: int) -> SamplingParams:
    spec = scorer.task.spec
    return SamplingParams(
        temperature=cfg.temperature, top_p=cfg.top_p,
        max_new_tokens=cfg.max_new_tokens or spec.max_new_tokens,
        stop=tuple(spec.stop or ()), seed=ctx.opts.seed * 7919 + salt,
    )


def rollouts(ctx, cfg, policy, problems, scorer, d: Path, stage: str) -> dict:
    gen = ctx.generator(policy)
    with ctx.progress("rollouts", len(problems), unit="problems") as adv, \
            ResumableLog(d / "rollouts.jsonl") as log:
        groups = sample_groups(
            gen, [Request.for_problem(p) for p in problems], cfg.n_samples, scorer,
            params=_params(ctx, cfg, scorer, 1), chunk_size=cfg.gen_chunk, ledger=ctx.ledger,
            stage=stage, progress=adv, log=log,
        )
    acc = [sum(g.rewards) / len(g.rewards) for g in groups]
    return {
        "n_problems": len(groups), "n_responses": sum(len(g.rollouts) for g in groups),
        "accuracy": sum(acc) / max(len(acc), 1),
        "all_correct": sum(a == 1.0 for a in acc), "all_wrong": sum(a == 0.0 for a in acc),
    }


def state_key(problem_id: str, prefix: str) -> str:
    """A state's id: its problem and a hash of its prefix (equal prefixes merge)."""
    return f"{problem_id}/{hashlib.sha256(prefix.encode()).hexdigest()[:12]}"


def states(ctx, cfg, problems, d: Path) -> dict:
    by_id = {p.id: p for p in problems}
    out, seen, kept, kept_ok = [], set(), 0, 0.0
    for row in read_jsonl(d / "rollouts.jsonl"):
        p = by_id[row["problem_id"]]
        for i in select_balanced(row["responses"], cfg.n_rollouts, seed=ctx.opts.seed):
            resp = row["responses"][i]
            kept += 1
            kept_ok += resp["reward"]
            for s in make_states(p.prompt, resp["text"]):
                key = state_key(p.id, s["prefix"])
                if key in seen:
                    continue
                seen.add(key)
                out.append({"key": key, "problem_id": p.id, "prompt": p.prompt,
                            "prefix": s["prefix"], "t": s["t"]})
    atomic_write_jsonl(d / "states.jsonl", out)
    return {"n_states": len(out), "kept_responses": kept,
            "kept_accuracy": kept_ok / max(kept, 1)}


def _mc_row(state: dict, group) -> dict:
    """An ``mc.jsonl`` row: the state's fields, its completions, its label, prompt tokens."""
    comps = [r.to_row() for r in group.rollouts]
    return {**{k: v for k, v in state.items() if k != "prompt"}, "completions": comps,
            "value": sum(c["reward"] for c in comps) / max(len(comps), 1),
            "prompt_tokens": group.prompt_tokens}


def mc_labels(ctx, cfg, policy, scorer, d: Path, stage: str) -> dict:
    sts = {s["key"]: s for s in read_jsonl(d / "states.jsonl")}
    reqs = [Request(k, s["problem_id"], s["prompt"] + s["prefix"], s["prefix"])
            for k, s in sts.items()]
    gen = ctx.generator(policy)
    with ctx.progress("mc labels", len(reqs), unit="states") as adv, \
            ResumableLog(d / "mc.jsonl", "completions") as log:
        groups = sample_groups(
            gen, reqs, cfg.mc_samples, scorer, params=_params(ctx, cfg, scorer, 2),
            chunk_size=cfg.gen_chunk, ledger=ctx.ledger, stage=stage, progress=adv, log=log,
            to_row=lambda r, g: _mc_row(sts[r.key], g),
        )
    vals = [sum(g.rewards) / max(len(g.rewards), 1) for g in groups]
    return {"n_states": len(groups), "n_completions": sum(len(g.rollouts) for g in groups),
            "mean_value": sum(vals) / max(len(vals), 1),
            "frac_0": sum(v == 0 for v in vals) / max(len(vals), 1),
            "frac_1": sum(v == 1 for v in vals) / max(len(vals), 1)}


def _heldout(problem_id: str, frac: float) -> bool:
    h = int.from_bytes(hashlib.sha256(problem_id.encode()).digest()[:4], "big") % 10000
    return h < frac * 10000


def critic(ctx, cfg, policy, d: Path, stage: str) -> dict:
    from dapo_bench.methods.dapo.critic import (
        calibration,
        critic_examples,
        score_values,
        train_critic,
    )
    from dapo_bench.models import load_policy
    from dapo_bench.training.value import ValueModel

    prompts = {s["key"]: s["prompt"] for s in read_jsonl(d / "states.jsonl")}
    data = critic_examples(read_jsonl(d / "mc.jsonl"), prompts,
                           step_labels=cfg.critic.step_labels)
    train = [x[:3] for x in data if not _heldout(x[3], cfg.critic.heldout_frac)]
    # the calibration report: held-out problems' MC states (m-sample labels) only
    held = [x[:3] for x in data if x[4] and _heldout(x[3], cfg.critic.heldout_frac)]
    lm, tok = load_policy(cfg.critic.model or policy)
    vm = ValueModel.from_causal_lm(lm)
    hist = train_critic(vm, tok, train, cfg.critic, seed=ctx.opts.seed,
                        engine_cfg=ctx.engine_cfg, ledger=ctx.ledger, stage=stage)
    preds = score_values(vm, tok, [(p, s) for p, s, _ in held], max_length=cfg.critic.max_length,
                         on_tokens=lambda t: ctx.ledger.add_inf(stage, t))
    vm.save(tok, d / "critic")
    cal = calibration(preds, [y for *_, y in held], bins=cfg.critic.bins)
    ctx.log(f"critic: held-out Brier {cal['brier']} (constant predictor "
            f"{cal.get('brier_constant')}), ECE {cal['ece']}")
    return {"n_train": len(train), "n_train_mc_states": sum(
                x[4] for x in data if not _heldout(x[3], cfg.critic.heldout_frac)),
            "n_heldout": len(held), "heldout": cal,
            "final_loss": hist[-1]["loss"] if hist else None, "history": hist}


def advantages(ctx, cfg, d: Path, stage: str) -> dict:
    from dapo_bench.methods.dapo.advantages import (
        VALUE_ESTIMATORS,
        candidates_from_completions,
        state_advantages,
    )
    from dapo_bench.methods.dapo.critic import score_values
    from dapo_bench.training.value import ValueModel

    est = VALUE_ESTIMATORS.entry(cfg.advantage)
    prompts = {s["key"]: s["prompt"] for s in read_jsonl(d / "states.jsonl")}
    rows = read_jsonl(d / "mc.jsonl")
    cands = [candidates_from_completions(r["completions"]) for r in rows]
    need = sorted({(prompts[r["key"]], r["prefix"] + c.text)
                   for r, cs in zip(rows, cands) for c in cs if not c.terminal})
    vals: dict = {}
    if est.meta.get("needs_critic", True):
        vm, tok = ValueModel.load(d / "critic")
        vals = dict(zip(need, score_values(vm, tok, need, max_length=cfg.critic.max_length,
                                           on_tokens=lambda t: ctx.ledger.add_inf(stage, t))))
    out, n_act, n_term = [], 0, 0
    for r, cs in zip(rows, cands):
        p = prompts[r["key"]]
        critic_v = [None if c.terminal else vals.get((p, r["prefix"] + c.text)) for c in cs]
        acts = state_advantages(cs, est.obj(cs, critic_v, cfg.mc_prior), cfg.min_spread)
        if acts is None:
            continue
        n_act += len(acts)
        n_term += sum(a["eos"] for a in acts)
        out.append({"key": r["key"], "problem_id": r["problem_id"], "prompt": p,
                    "prefix": r["prefix"], "actions": acts})
    atomic_write_jsonl(d / "advantages.jsonl", out)
    return {"n_states": len(rows), "kept_states": len(out), "n_actions": n_act,
            "terminal_actions": n_term, "estimator": cfg.advantage,
            "scored_actions": len(vals)}


def actor(ctx, cfg, policy, d: Path, stage: str) -> dict:
    from dapo_bench.methods.dapo.actor import dapo_actor_loss, reference_logprobs, train_actor
    from dapo_bench.models import load_policy, save_policy

    sts = read_jsonl(d / "advantages.jsonl")
    model, tok = load_policy(policy)
    cache = d / "ref_logprobs.json"
    if not cache.is_file():
        n = [0]
        lps = reference_logprobs(model, tok, sts, max_length=cfg.actor.max_length,
                                 on_tokens=lambda t: n.__setitem__(0, n[0] + t))
        atomic_write_json(cache, {"keys": [s["key"] for s in sts], "logprobs": lps,
                                  "tokens": n[0]})
    ref = read_json(cache)
    ctx.ledger.add_inf(stage, ref["tokens"])
    if not sts:
        ctx.log("actor: no state kept by the advantage filter; the policy is unchanged")
        save_policy(model, tok, d / "actor")
        return {"steps": 0, "history": []}
    hist = train_actor(model, tok, sts, ref["logprobs"], beta=cfg.beta, cfg=cfg.actor,
                       seed=ctx.opts.seed, engine_cfg=ctx.engine_cfg, ledger=ctx.ledger,
                       stage=stage)
    save_policy(model, tok, d / "actor")
    # after training: the log-ratio of every action against A (an inference pass, counted)
    import torch

    after = reference_logprobs(model, tok, sts, max_length=cfg.actor.max_length,
                               on_tokens=lambda t: ctx.ledger.add_inf(stage, t))
    flat = lambda xs: torch.tensor([x for row in xs for x in row])
    adv = torch.tensor([a["adv"] for s in sts for a in s["actions"]])
    _, final = dapo_actor_loss(flat(after), flat(ref["logprobs"]), adv, cfg.beta)
    ctx.log(f"actor: {len(hist)} steps; after training loss {final['loss']:.4g}, sign agreement "
            f"{final['sign_agree']:.3f}, mean |log-ratio| {final['abs_log_ratio']:.3f}")
    return {"steps": len(hist), "n_states": len(sts), "n_actions": int(adv.numel()),
            "after": final, "history": hist}
