"""DAPO's actor update: regress each step's log-ratio onto A/beta (Liu et al., 2412.18279).

Loss, per action::

    0.5 * (A(s, a) / beta - (log pi_theta(a|s) - log pi_ref(a|s)))^2

with log pi(a|s) the SUM of the step's token log-probs (a terminal step includes the EOS token:
stopping is part of the action). The regression target A/beta is the optimal log-ratio of the
KL-regularised objective.

Input: the ``advantages.jsonl`` rows, ``rows.AdvantageRow`` (a state's prompt and prefix ids and
its kept ``rows.Action`` records: ids, eos, adv), token ids as generated: log pi(a|s) is scored
on exactly the sampled ids.
:func:`reference_logprobs` computes log pi_ref(a|s) once (cached by the caller);
:func:`train_actor` trains the policy in place through the one training loop, batching whole
states (all actions of one state in the same global batch), and logs loss, sign agreement of
the log-ratio with A, and mean |log-ratio|. With ``stop_tol`` > 0 it stops by the paper's rule
(:func:`log_ratio_converged`): when the batch mean |log-ratio| has converged.

Not covered: importance weighting of the off-policy actions, any clipping of the log-ratio.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch

from dapo_bench.methods.dapo.config import ActorConfig
from dapo_bench.methods.dapo.rows import AdvantageRow
from dapo_bench.training.batches import PairBatch, pack_pairs, sequence_logprobs
from dapo_bench.training.engine import ONE_PROCESS, EngineConfig, make_engine
from dapo_bench.training.loop import LoopStats, LossOut, train_loop
from dapo_bench.training.scope import Scope

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def dapo_actor_loss(
    logp: torch.Tensor, ref_logp: torch.Tensor, adv: torch.Tensor, beta: float
) -> tuple[torch.Tensor, dict]:
    """Mean over actions of 0.5 * (A/beta - (logp - ref_logp))^2, plus logging statistics.

    Statistics: ``sign_agree`` = fraction of actions with A != 0 whose log-ratio has A's sign
    (a zero log-ratio counts as disagreement); ``abs_log_ratio`` = mean |logp - ref_logp|.
    """
    ratio = logp - ref_logp
    loss = 0.5 * (adv / beta - ratio).pow(2).mean()
    with torch.no_grad():
        nz = adv != 0
        agree = ((torch.sign(ratio) == torch.sign(adv)) & nz).sum().item()
        stats = {
            "loss": float(loss.detach()),
            "sign_agree": agree / max(int(nz.sum().item()), 1),
            "abs_log_ratio": float(ratio.abs().mean()),
        }
    return loss, stats


def log_ratio_converged(values: Sequence[float], tol: float, window: int) -> bool:
    """The paper's stopping rule on the per-step batch means of |log-ratio| so far: True when
    the mean of the last ``window`` differs from the mean of the ``window`` before them by
    less than ``tol`` (so never before ``2 * window`` steps; ``tol`` 0: never)."""
    if tol <= 0 or len(values) < 2 * window:
        return False
    last = sum(values[-window:]) / window
    before = sum(values[-2 * window : -window]) / window
    return abs(last - before) < tol


def batches_by_state(groups: Sequence[Sequence[object]], max_actions: int) -> list[list[int]]:
    """Pack whole groups (the actions of one state) into batches of at most ``max_actions``.

    A group larger than ``max_actions`` gets a batch of its own: a state is never split.
    Returns lists of group indices, in order.
    """
    out: list[list[int]] = []
    cur: list[int] = []
    size = 0
    for gi, g in enumerate(groups):
        if cur and size + len(g) > max_actions:
            out.append(cur)
            cur, size = [], 0
        cur.append(gi)
        size += len(g)
    if cur:
        out.append(cur)
    return out


def _encode(pad_id: int, states: Sequence[AdvantageRow], idx: Sequence[int],
            max_length: int) -> PairBatch:
    """The actions of states ``idx``: context = prompt + prefix ids, response = the action's
    generated ids (a terminal one ends with the EOS it generated)."""
    ctx, act = [], []
    for i in idx:
        s = states[i]
        for a in s.actions:
            ctx.append(s.context)
            act.append(a.ids)
    return pack_pairs(ctx, act, pad_id=pad_id, max_length=max_length)


# actions per scoring forward pass (no backward) unless --micro-batch bounds it: a pass holds
# [actions x tokens x vocabulary] logits (256 x ~400 x 49k floats is 20 GB)
SCORE_BATCH = 256


@torch.no_grad()
def reference_logprobs(
    model: PreTrainedModel,
    pad_id: int,
    states: Sequence[AdvantageRow],
    *,
    batch_actions: int = SCORE_BATCH,
    max_length: int = 4096,
    on_batch: Callable[[PairBatch], None] | None = None,
) -> list[list[float]]:
    """log pi(a|s) of every action of every state under ``model`` (per state, per action);
    ``on_batch`` gets every batch scored (tokens for the ledger, truncation counts)."""
    model.eval()
    out: list[list[float]] = [[] for _ in states]
    for idx in batches_by_state([s.actions for s in states], batch_actions):
        b = _encode(pad_id, states, idx, max_length).to(model.device)
        lp = sequence_logprobs(model, b).tolist()
        k = 0
        for i in idx:
            n = len(states[i].actions)
            out[i] = lp[k : k + n]
            k += n
        if on_batch:
            on_batch(b)
    return out


def train_actor(
    model: PreTrainedModel,
    pad_id: int,
    states: Sequence[AdvantageRow],
    ref_logps: Sequence[Sequence[float]],
    *,
    beta: float,
    cfg: ActorConfig,
    seed: int = 0,
    engine_cfg: EngineConfig = ONE_PROCESS,
    scope: Scope = Scope("actor"),
) -> LoopStats:
    """Train ``model`` in place with the DAPO actor loss; returns the loop's stats (per-step
    history, truncation counts). Stops early when the FLOP budget of ``scope``'s ledger is spent."""
    torch.manual_seed(seed)
    engine = make_engine(model, cfg.optim, engine_cfg)
    batches = batches_by_state([s.actions for s in states], cfg.batch_actions)

    def epoch_batches(epoch: int) -> list[list[int]]:
        order = list(range(len(batches)))
        random.Random(seed + epoch).shuffle(order)
        return [batches[bi] for bi in order]

    def loss_fn(idx: list[int]) -> LossOut:
        b = _encode(pad_id, states, idx, cfg.max_length).to(model.device)
        adv = torch.tensor([a.adv for i in idx for a in states[i].actions])
        ref = torch.tensor([x for i in idx for x in ref_logps[i]])
        logp = sequence_logprobs(model, b)
        loss, stats = dapo_actor_loss(logp, ref.to(logp.device), adv.to(logp.device), beta)
        return LossOut(loss, len(adv), b.n_tokens, {**stats, "n_actions": len(adv)},
                       counts=b.cuts)

    def converged(st: LoopStats) -> bool:  # history: one row per step (log_every=1)
        return log_ratio_converged([h["abs_log_ratio"] for h in st.history], cfg.stop_tol,
                                   cfg.stop_window)

    def cost(i: int) -> int:  # the tokens of state i's actions, each with its context
        s = states[i]
        ctx_len = len(s.prompt_ids) + len(s.prefix_ids)
        return sum(min(ctx_len + len(a.ids), cfg.max_length) for a in s.actions)

    return train_loop(engine, epoch_batches, loss_fn, total_steps=cfg.epochs * len(batches),
                      scope=scope, log_every=1,
                      stop=converged if cfg.stop_tol > 0 else None, cost=cost)
