"""What the online methods (GRPO, PPO) share: the policy they sample from while training it,
one online step's rollouts as a tokenised batch, and the loop over online steps.

- :class:`OnlinePolicy`: a generator that samples from the weights being trained.
- :func:`sample_step`: the next prompts' rollouts from the policy's current weights (through the
  one rollout path, ``training.rollouts.sample_groups``), tokenised as a :class:`RolloutBatch`.
- :func:`online_loop`: ``max_steps`` online steps (sample, then the method's ``update``, which
  runs the one training loop on the batch), stopping when the FLOP budget is spent; with
  ``--checkpoint-every K`` it saves every K online steps and resumes after the last save.
- :func:`update_passes`: ``ppo_epochs`` passes of minibatch steps over one online batch (the
  one training loop, with the method's loss).
- :func:`chunked_logprobs`: per-token log-probs of a big batch, in row chunks, no grad.

Ledger accounting: sampling charges prompt tokens (once per prompt) plus generated tokens as
inference; a scoring forward pass charges the tokens it processes (no padding) as inference.

Token ids are the truth: a step's batch is the prompt ids every method samples from plus each
response's generated ids (EOS included when it stopped on EOS), never re-tokenised text; rows
over ``max_length`` lose the start of their prompt (counted in ``RolloutBatch.batch.cuts``).

Several ranks: each rank samples its contiguous share of a step's prompts (a prompt's whole
group stays on one rank, so group statistics are unchanged), scores them and computes their
advantages locally; the update is data parallel (each rank steps on its rows, the loss weighted
by its share, gradients averaged), so every rank's weights, and so every rank's generator, stay
equal. Token counts and step statistics are summed over ranks (:func:`charge`), so every rank
sees the same ledger and stops at the same step.

Not covered: tensor-parallel generation groups; ZeRO-3 (the generator needs whole weights).
"""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch

from dapo_bench import dist, telemetry
from dapo_bench.errors import UserError
from dapo_bench.generation.base import Generator, SamplingParams
from dapo_bench.models import load_policy, save_policy
from dapo_bench.training import checkpoint
from dapo_bench.training.batches import PairBatch, pack_pairs, token_logprobs
from dapo_bench.training.loop import shuffled_batches, train_loop
from dapo_bench.training.rollouts import (
    Group,
    Request,
    Score,
    TrainProblem,
    infra_errors,
    sample_groups,
)
from dapo_bench.training.scope import Scope


class OnlinePolicy:
    """The policy an online method trains, and a generator that samples from its weights.

    With the ``hf`` backend the generator's own torch model is trained in place (no copy, no
    reload). Any other backend (vLLM) gets a separate torch copy; :meth:`sync` saves it to
    ``sync_dir`` and calls ``generator.update_weights`` (call it before each rollout).
    """

    def __init__(self, generator: Generator, model_dir: str, sync_dir: str | Path):
        self.generator = generator
        own = getattr(generator, "model", None)
        self.in_place = isinstance(own, torch.nn.Module)
        self.model: torch.nn.Module
        if isinstance(own, torch.nn.Module):  # in place
            self.model, self.tokenizer = own, generator.tokenizer
        else:
            self.model, self.tokenizer = load_policy(model_dir)
        self.sync_dir = Path(sync_dir)
        self._dirty = False

    def mark_updated(self) -> None:
        self._dirty = True

    def sync(self) -> None:
        if self.in_place or not self._dirty:
            return
        save_policy(self.model, self.tokenizer, self.sync_dir)
        self.generator.update_weights(str(self.sync_dir))
        self._dirty = False

    def close(self) -> None:
        self.generator.close()


def shuffled_cycle(problems: Sequence[TrainProblem], seed: int):
    """Yield problems forever: each pass over them in a fresh seeded order."""
    rng = random.Random(seed)
    while True:
        order = list(problems)
        rng.shuffle(order)
        yield from order


@dataclass
class RolloutBatch:
    """Flattened rollouts of some groups, tokenised, with outcome rewards and group ids."""

    batch: PairBatch
    rewards: list[float]
    group: list[str]
    infra_errors: int = 0  # rollouts masked (Group.infra): not in the batch, counted

    def rows(self, idx: Sequence[int]) -> PairBatch:
        return self.batch.rows(idx)


def groups_to_batch(tokenizer: Any, prompts: dict[str, Sequence[int]], groups: Sequence[Group],
                    max_length: int = 1024) -> RolloutBatch:
    """Every rollout of ``groups`` as a (prompt ids, generated ids) row; ``prompts``: key ->
    prompt ids."""
    rows = [(g, r) for g in groups for r in g.rollouts]
    # a sampled rollout has its ids (sample_chunk refuses a backend that returns none)
    ids = cast("list[Sequence[int]]", [r.token_ids for _, r in rows])
    batch = pack_pairs([prompts[g.key] for g, _ in rows], ids,
                       pad_id=tokenizer.pad_token_id, max_length=max_length)
    return RolloutBatch(batch, [r.reward for _, r in rows], [g.problem_id for g, _ in rows],
                        infra_errors(groups))


def slice_rows(t: torch.Tensor, idx: Sequence[int]) -> torch.Tensor:
    return t[torch.as_tensor(list(idx), dtype=torch.long)]


@torch.no_grad()
def chunked_logprobs(
    model, rb: RolloutBatch, *, chunk: int = 256, scope: Scope = Scope()
) -> torch.Tensor:
    """``token_logprobs`` of every row of ``rb`` ([B, L]), ``chunk`` rows per forward pass;
    the tokens, summed over ranks, are charged to ``scope`` as inference."""
    was_training = model.training
    model.eval()
    n = rb.batch.input_ids.size(0)
    out = torch.zeros(rb.batch.input_ids.shape)
    tokens = 0
    for s in range(0, n, chunk):
        idx = list(range(s, min(n, s + chunk)))
        mb = rb.rows(idx)
        out[idx] = token_logprobs(model, mb.to(model.device)).float().cpu()
        tokens += mb.n_tokens
    scope.charge_ranks(tokens)
    model.train(was_training)
    return out


def frozen_copy(model: Any) -> Any:
    """pi_ref: a copy of ``model`` in eval mode with no gradients."""
    ref = copy.deepcopy(model).eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    return ref


def sample_step(policy: OnlinePolicy, stream, n_prompts: int, n_samples: int, score: Score,
                params: SamplingParams, *, scope: Scope, max_length: int) -> RolloutBatch:
    """One online step's rollouts: the next ``n_prompts`` problems of ``stream``, ``n_samples``
    each, sampled from the policy's current weights, scored and tokenised."""
    policy.model.eval()
    policy.sync()
    probs = dist.shard([next(stream) for _ in range(n_prompts)])  # this rank's prompts
    reqs = [Request.for_problem(p) for p in probs]
    groups = sample_groups(policy.generator, reqs, n_samples, score, params=params,
                           chunk_size=max(len(reqs), 1))
    scope.charge_ranks(sum(g.tokens for g in groups))
    return groups_to_batch(policy.tokenizer, {r.key: _ids(policy.tokenizer, r.context)
                                              for r in reqs}, groups, max_length)


def _ids(tokenizer: Any, context: Any) -> list[int]:
    from dapo_bench.models import encode_prompt

    return encode_prompt(tokenizer, context) if isinstance(context, str) else list(context)


def sampling_params(cfg: Any, n: int, seed: int) -> SamplingParams:
    return SamplingParams(n=n, temperature=cfg.temperature, top_p=cfg.top_p,
                          max_new_tokens=cfg.max_new_tokens, seed=seed)


def global_rows(rb: RolloutBatch) -> int:
    """Rows of a step's batch over all ranks."""
    return int(dist.all_sum([rb.batch.input_ids.size(0)])[0])


def update_passes(engines: Any, rb: RolloutBatch, loss_fn, cfg: Any, *, scope: Scope,
                  seed: int, step: int) -> dict:
    """``cfg.ppo_epochs`` passes of ``cfg.minibatch_size``-response steps over an online batch
    (the one training loop); the mean statistics of those steps. Several ranks: the global
    batch is every rank's rows, each step takes about ``minibatch_size / world`` of each rank's
    own rows (every rank the same number of steps)."""
    n = rb.batch.input_ids.size(0)
    n_all = global_rows(rb)
    per_epoch = math.ceil(n_all / cfg.minibatch_size)
    if dist.world_size() == 1:
        def batches(epoch: int) -> list[list[int]]:
            return shuffled_batches(n, cfg.minibatch_size, seed + 7919 * step + epoch)
    else:
        if n < per_epoch:
            raise UserError(f"{scope.stage}: {n} rows on rank {dist.rank()} cannot fill {per_epoch} "
                            f"minibatch steps: give more prompts per step or a larger minibatch")

        def batches(epoch: int) -> list[list[int]]:
            order = shuffled_batches(n, n, seed + 7919 * step + epoch)[0]
            return [order[n * i // per_epoch : n * (i + 1) // per_epoch] for i in range(per_epoch)]
    st = train_loop(engines, batches, loss_fn, total_steps=cfg.ppo_epochs * per_epoch,
                    scope=scope, log_every=10**9, local=True, resume=False)
    return st.means


# (rollout batch, online step index) -> statistics of the update it ran
Update = Callable[[RolloutBatch, int], dict]
# (policy, online step index, prompts per step, the step's sampling): called after a step's
# sampling, before its update (the run's canaries)
Watch = Callable[[OnlinePolicy, int, int, SamplingParams], None]


def online_loop(policy: OnlinePolicy, problems: Sequence[TrainProblem], *, n_prompts: int,
                n_samples: int, params: Callable[[int], SamplingParams], update: Update,
                max_steps: int, max_length: int, score: Score, scope: Scope,
                seed: int, engines: dict[str, Any],
                on_log: Callable[[dict], None] | None = None,
                watch: Watch | None = None) -> list[dict]:
    """``max_steps`` online steps: sample from the current weights, then ``update``; per-step
    logs, charged to ``scope`` (the stage's ledger). Stops when its FLOP budget is spent.
    ``watch(policy, step, n_prompts, params(step))`` runs after each step's sampling, from the
    same weights, before the update (the run's canaries).

    Inside a checkpointed stage (``--checkpoint-every K``) it saves ``engines`` (every engine
    ``update`` steps), the RNG, the history and the ledger every K online steps, and a rerun
    resumes after the last save: the problem stream is replayed to the same place, rollouts are
    seeded by step, so the steps after it are the ones an uninterrupted run takes."""
    stream = shuffled_cycle(problems, seed)
    history: list[dict] = []
    t0 = time.perf_counter()
    start = 0
    ckpt = checkpoint.take()
    key = {"stage": scope.stage, "online_steps": max_steps, "world": dist.world_size(),
           "engines": sorted(engines), "prompts": n_prompts, "samples": n_samples}
    saved = ckpt.load(engines, key, scope) if ckpt is not None else None
    if saved is not None:
        start, history = saved["steps"], saved["history"]
        t0 -= saved["seconds"]
        for _ in range(start * n_prompts):  # the problems the saved steps sampled
            next(stream)
        policy.mark_updated()  # a generator with its own copy gets the loaded weights
    for step in range(start, max_steps):
        if scope.exhausted():
            break
        sp = params(step)
        rb = sample_step(policy, stream, n_prompts, n_samples, score, sp,
                         scope=scope, max_length=max_length)
        if watch is not None:
            watch(policy, step, n_prompts, sp)
        stats = update(rb, step)
        policy.mark_updated()
        cuts = rb.batch.cuts
        rows, reward, reward2, resp, ctx_cut, resp_cut, infra = dist.all_sum([
            len(rb.rewards), sum(rb.rewards), sum(r * r for r in rb.rewards),
            float(rb.batch.response_mask.sum()), cuts["context_cut"], cuts["response_cut"],
            rb.infra_errors])
        n = max(rows, 1)
        telemetry.scalars(scope.stage, {**telemetry.reward_stats(rows, reward, reward2),
                                  "response_tokens": resp / n})
        history.append({"step": step + 1, "reward": reward / n, "response_tokens": resp / n,
                        "flops": scope.flops,
                        "seconds": round(time.perf_counter() - t0, 2), **stats,
                        "rows": int(rows), "context_cut": int(ctx_cut),
                        "response_cut": int(resp_cut),
                        **({"infra_errors": int(infra)} if infra else {})})
        if on_log:
            on_log(history[-1])
        if ckpt is not None and ckpt.due(step + 1, max_steps) and not scope.exhausted():
            ckpt.save(engines, {"steps": step + 1, "history": history,
                                "seconds": time.perf_counter() - t0}, key, scope)
    policy.model.eval()
    return history


@dataclass(frozen=True)
class OnlineRun:
    """What a GRPO/PPO trainer gets besides its policy, problems and config: the stage's
    scope (ledger, name), the reward (``Score``), the seed, the engine settings and a per-step
    log hook.
    :func:`online_trainer` builds it from the keyword arguments every online trainer takes."""

    scope: Scope
    score: Score
    seed: int = 0
    engine_cfg: Any = None
    on_log: Callable[[dict], None] | None = None
    watch: Watch | None = None

    def loop(self, policy: OnlinePolicy, problems: Sequence[TrainProblem], cfg: Any, *,
             n_prompts: int, n_samples: int, update: Update,
             engines: dict[str, Any]) -> list[dict]:
        """:func:`online_loop` with the config's steps, lengths and sampling (step ``k``
        samples with seed ``seed * 100003 + k``)."""
        return online_loop(
            policy, problems, n_prompts=n_prompts, n_samples=n_samples,
            params=lambda step: sampling_params(cfg, n_samples, self.seed * 100003 + step),
            update=update, max_steps=cfg.max_steps, max_length=cfg.max_length,
            score=self.score, scope=self.scope, seed=self.seed,
            engines=engines, on_log=self.on_log, watch=self.watch)


def online_trainer(fn: Callable[..., list[dict]]) -> Callable[..., list[dict]]:
    """``fn(policy, problems, cfg, run: OnlineRun)`` as ``train(policy, problems, cfg, *,
    scope, score, seed=0, engine_cfg=ONE_PROCESS, on_log=None, watch=None)``:
    the one signature of the online trainers (``methods.online_stage.run_online`` calls it)."""
    import functools

    from dapo_bench.training.engine import ONE_PROCESS

    @functools.wraps(fn)
    def train(policy: OnlinePolicy, problems: list, cfg: Any, *, scope: Scope, score: Score,
              seed: int = 0, engine_cfg: Any = ONE_PROCESS,
              on_log: Callable[[dict], None] | None = None,
              watch: Watch | None = None) -> list[dict]:
        return fn(policy, problems, cfg, OnlineRun(scope, score, seed, engine_cfg, on_log, watch))

    return train
