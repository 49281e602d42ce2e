"""DAPO's actor update: regress the step log-ratio onto A/beta (see ``dapo_loss``).

Input: states with their kept actions, ``{prompt, prefix, actions: [{text, eos, adv}]}``.
:func:`reference_logprobs` computes log pi_ref(a|s) once (to be cached by the caller);
:func:`train_actor` then trains the policy in place for a few epochs, batching whole states
(all actions of one state in the same batch), and logs loss, sign agreement of the log-ratio
with A, and mean |log-ratio|.

Not covered: gradient accumulation; multi-GPU data sharding (a DeepSpeed engine still works).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from dapo_bench.training.common import (
    OptimConfig,
    PairBatch,
    encode_pairs,
    make_engine,
    sequence_logprobs,
)
from dapo_bench.training.dapo_loss import batches_by_state, dapo_actor_loss


@dataclass(frozen=True)
class ActorConfig:
    """Actor settings.

    lr: AdamW learning rate; epochs: passes over the kept states (few: the data is off-policy);
    batch_actions: actions per optimizer step (whole states, so a batch may hold more when one
    state alone has more); grad_clip: global norm clip; max_length: token cap per sequence.
    """

    lr: float = 1e-6
    epochs: int = 1
    batch_actions: int = 64
    grad_clip: float = 1.0
    max_length: int = 1024
    weight_decay: float = 0.0
    optim: OptimConfig = field(default_factory=OptimConfig)


def _flatten(states: Sequence[dict], idx: Sequence[int]) -> tuple[list[str], list[str], list[bool]]:
    ctx, act, eos = [], [], []
    for i in idx:
        s = states[i]
        for a in s["actions"]:
            ctx.append(s["prompt"] + s["prefix"])
            act.append(a["text"])
            eos.append(bool(a["eos"]))
    return ctx, act, eos


def _encode(tok: Any, states: Sequence[dict], idx: Sequence[int], max_length: int) -> PairBatch:
    ctx, act, eos = _flatten(states, idx)
    return encode_pairs(tok, ctx, act, max_length=max_length, add_eos=eos)


@torch.no_grad()
def reference_logprobs(
    model: Any,
    tok: Any,
    states: Sequence[dict],
    *,
    batch_actions: int = 256,
    max_length: int = 1024,
    on_tokens: Callable[[int], None] | None = None,
) -> list[list[float]]:
    """log pi(a|s) of every action of every state under ``model`` (per state, per action)."""
    model.eval()
    out: list[list[float]] = [[] for _ in states]
    for idx in batches_by_state([s["actions"] for s in states], batch_actions):
        b = _encode(tok, states, idx, max_length)
        lp = sequence_logprobs(model, b).tolist()
        k = 0
        for i in idx:
            n = len(states[i]["actions"])
            out[i] = lp[k : k + n]
            k += n
        if on_tokens:
            on_tokens(b.n_tokens)
    return out


def train_actor(
    model: Any,
    tok: Any,
    states: Sequence[dict],
    ref_logps: Sequence[Sequence[float]],
    *,
    beta: float,
    cfg: ActorConfig,
    seed: int = 0,
    on_step: Callable[[dict, int], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[dict]:
    """Train ``model`` in place with the DAPO actor loss; returns per-step logs.

    ``on_step(stats, tokens)`` runs after every optimizer step; ``stop()`` returning True ends
    training early (e.g. a spent FLOP budget).
    """
    torch.manual_seed(seed)
    opt = OptimConfig(**{**cfg.optim.__dict__, "lr": cfg.lr, "grad_clip": cfg.grad_clip,
                         "weight_decay": cfg.weight_decay})
    engine = make_engine(model, opt)
    model.train()
    batches = batches_by_state([s["actions"] for s in states], cfg.batch_actions)
    history: list[dict] = []
    step = 0
    for epoch in range(cfg.epochs):
        order = list(range(len(batches)))
        random.Random(seed + epoch).shuffle(order)
        for bi in order:
            if stop is not None and stop():
                model.eval()
                return history
            idx = batches[bi]
            b = _encode(tok, states, idx, cfg.max_length)
            adv = torch.tensor([a["adv"] for i in idx for a in states[i]["actions"]])
            ref = torch.tensor([x for i in idx for x in ref_logps[i]])
            logp = sequence_logprobs(model, b)
            loss, stats = dapo_actor_loss(logp, ref, adv, beta)
            stats["grad_norm"] = engine.step(loss)
            step += 1
            stats.update(step=step, epoch=epoch, n_actions=len(adv))
            history.append(stats)
            if on_step:
                on_step(stats, b.n_tokens)
    model.eval()
    return history
