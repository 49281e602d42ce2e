"""The one training loop: every trainer (SFT, the critic, DAPO's actor, DPO, GRPO, PPO) runs it.

    stats = train_loop(engine, batches, loss_fn, total_steps=N, schedule=Schedule(lr=...),
                       scope=Scope("train", ledger))

A trainer supplies only its batches and its loss:

- ``batches(epoch)`` -> the epoch's global batches, each a list of items (row indices, states,
  pairs: whatever ``loss_fn`` understands). :func:`shuffled_batches` is the usual one.
- ``loss_fn(items)`` -> :class:`LossOut`: the loss to minimise as the MEAN over ``weight``
  units of those items (tokens for a token-mean, rows for a per-row mean), the tokens the
  forward pass processed (for the compute ledger), statistics to log, and counts to add up
  (e.g. rows whose context was cut to ``max_length``: ``PairBatch.cuts``). A dict of losses steps
  a dict of engines of the same keys (PPO's actor and critic).

The loop runs ``total_steps`` optimizer steps over as many epochs as that takes (a fraction of
the last one included), and per step: stops early when ``stop(stats)`` says so (it sees the
steps and history so far, a resumed loop's included) or the ledger's FLOP budget is spent
(``stopped``), sets the learning rate from ``schedule``, gives each rank its share of the
global batch, steps every engine, charges the step's tokens to ``scope`` (the stage's
:class:`~dapo_bench.training.scope.Scope`: its ledger, under its name), and every ``log_every``
steps appends the mean statistics of those steps to the history (and calls ``on_log``). ``on_epoch(epoch, stats)`` runs after each full epoch; True
stops training. Under ``--report-to`` every step's statistics, gradient norm, learning rate,
tokens/s and the ledger's FLOPs go to the run's recording (``dapo_bench.telemetry``).

Several ranks (``torchrun``/DeepSpeed): each rank gets its contiguous share of every global batch
(``dist.shard``); a rank left without items steps on one with weight 0. With ``local=True`` the
items ``batches`` gives are already this rank's (online methods: each rank sampled its own
rows); the ranks must then agree on ``total_steps``. Each rank's mean loss is
scaled by ``world * weight / total weight``, so DeepSpeed's gradient average is the gradient of
the whole batch's mean: N ranks take the same step as one process (to float rounding), each on
1/N of the rows. Statistics and token counts are summed over ranks, so every rank logs and
charges the same: at each step, or, when the trainer says each item's ``weight`` (so that
every rank knows the batch's total weight), once a log window (see :func:`train_loop`). In one
process nothing is scaled (bit-exact with the unsharded loss).

Micro-batches (gradient accumulation): with the engines' ``micro_batch`` (``EngineConfig``, the
run's ``--micro-batch``) a rank's share of a batch over that many items is cut into the fewest
balanced micro-batches of at most ``micro_batch`` items (:func:`micro_batches`, in order), and
``loss_fn`` runs on each; every micro loss is backpropagated times its weight, and the engine's
``update`` scales the summed gradients by 1 / the global batch's total weight (times ``world``,
as above) before it averages, clips and steps once. The update is the whole batch's mean-loss
gradient, to float rounding; the statistics are weight-weighted means over micro-batches (and
ranks), tokens and counts are summed, the ledger is charged the same tokens. A batch is cut
between items only, so an item that a loss needs whole (DAPO's state with its actions, DPO's
pair) stays whole. ``micro_batch`` changes memory, not the update; 0 = the whole share at once.

Checkpoints: inside a stage that ``RunContext.run_stage`` runs with ``--checkpoint-every K``,
the loop saves every K steps and, rerun, resumes from the last save: the batches stepped on
before it are skipped, the rest are the steps an uninterrupted loop takes
(:mod:`dapo_bench.training.checkpoint`). A loop that runs several times a stage (online methods,
whose outer loop is the one checkpointed) passes ``resume=False``.

Not covered: mixed precision (the engine's), evaluation during training (callers do it in
``on_epoch``), micro-batches on the DeepSpeed engine (refused by ``EngineConfig``).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dapo_bench import dist, telemetry
from dapo_bench.errors import UserError
from dapo_bench.training import checkpoint
from dapo_bench.training.schedule import Schedule
from dapo_bench.training.scope import Scope


@dataclass
class LossOut:
    """One step's loss(es) on this rank's items; see the module doc."""

    loss: Any  # a scalar tensor, or {engine name: scalar tensor}
    weight: float  # units the loss is a mean over (tokens or rows)
    tokens: int  # tokens the step's forward/backward passes processed
    stats: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # summed over steps (and ranks)


@dataclass
class LoopStats:
    steps: int = 0
    items: int = 0  # items stepped on (summed over epochs)
    epochs: float = 0.0  # passes over the data done (items seen / items per epoch)
    tokens: int = 0
    seconds: float = 0.0
    stopped: str = ""  # "" | "budget" | "stop" | "callback" (callers may add theirs)
    loss: float = float("nan")  # mean loss of the last logged window
    history: list[dict] = field(default_factory=list)
    means: dict[str, float] = field(default_factory=dict)  # mean of every stat over all steps
    counts: dict[str, int] = field(default_factory=dict)  # LossOut.counts summed
    last_tokens: int = 0


# what a mid-stage checkpoint keeps of LoopStats (training.checkpoint)
_RESUMED = ("steps", "items", "epochs", "tokens", "loss", "history", "counts", "last_tokens")


def shuffled_batches(n: int, size: int, seed: int) -> list[list[int]]:
    """``0..n-1`` in a seeded random order, cut into batches of at most ``size``."""
    if size < 1:
        raise UserError(f"batch size must be >= 1, got {size}")
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [order[s : s + size] for s in range(0, n, size)]


def steps_for(epochs: float, n_items: int, batch_size: int, *, whole_batches: bool = True) -> int:
    """Optimizer steps of ``epochs`` passes over ``n_items`` in batches of ``batch_size``:
    ``epochs`` times the batches of one pass (a short last batch counts as one), or with
    ``whole_batches=False`` ``epochs * n_items / batch_size`` rounded up (at least 1)."""
    if not whole_batches:
        return max(1, math.ceil(epochs * n_items / batch_size))
    return math.ceil(epochs * math.ceil(n_items / batch_size))


def train_loop(
    engine: Any,
    batches: Callable[[int], Sequence[Sequence[Any]]],
    loss_fn: Callable[[list[Any]], LossOut],
    *,
    total_steps: int,
    schedule: Schedule | None = None,
    scope: Scope = Scope("train"),
    log_every: int = 20,
    on_log: Callable[[LoopStats], None] | None = None,
    on_epoch: Callable[[int, LoopStats], bool] | None = None,
    stop: Callable[[LoopStats], bool] | None = None,
    local: bool = False,
    resume: bool = True,
    cost: Callable[[Any], float] | None = None,
    weight: Callable[[Any], float] | None = None,
) -> LoopStats:
    """Run the loop (see the module doc); returns what was done. ``cost``: what one item costs
    to run (its tokens); given, several ranks split each batch by it (``dist.balanced_shard``:
    equal work, so that no rank waits for the other at the step's all-reduce), else by count.
    ``weight``: an item's weight in the loss's mean (``LossOut.weight`` = their sum); given,
    the step's statistics, tokens and counts are summed over ranks only when read (a log line,
    a checkpoint, an epoch's end; every step with ``stop``, a FLOP budget or ``--report-to``):
    one collective a log window, not one a step (2.5-5 ms each here, docs/scale-out.md)."""
    engines = engine if isinstance(engine, dict) else {"": engine}
    micro = _micro_batch(engines)
    for e in engines.values():
        e.module.train()
    stats = LoopStats()
    t0 = time.perf_counter()
    window: list[dict] = []
    totals: dict[str, float] = {}
    pending: list[_StepOut] = []  # steps taken whose statistics are not summed over ranks yet
    known = weight if not local else None  # local items: the batch's weight is spread out
    eager = (known is None or dist.world_size() == 1 or stop is not None
             or telemetry.active() or scope.budgeted)

    def settle() -> None:
        """The pending steps' statistics, tokens and counts, summed over ranks in one
        collective, into ``stats``, the ledger, the telemetry and the log window."""
        for out in _summed(pending):
            row, counts = out.result()
            for k, v in counts.items():
                stats.counts[k] = stats.counts.get(k, 0) + v
            stats.last_tokens = int(row.pop("_tokens"))
            stats.tokens += stats.last_tokens
            scope.charge_train(stats.last_tokens)
            telemetry.count_step()
            if telemetry.active():
                _report(scope, row, engines, stats.last_tokens, out.seconds)
            window.append(row)
            for k, v in row.items():
                totals[k] = totals.get(k, 0.0) + v
        pending.clear()

    epoch = skip = seen = 0
    ckpt = checkpoint.take() if resume else None
    key: dict = {}
    if ckpt is not None:
        key = {"stage": scope.stage, "total_steps": total_steps, "world": dist.world_size(),
               "engines": sorted(engines), "items": [len(b) for b in batches(0)]}
        saved = ckpt.load(engines, key, scope)
        if saved is not None:
            epoch, skip, seen = saved["epoch"], saved["batches_done"], saved["seen"]
            window, totals = saved["window"], saved["totals"]
            for f in _RESUMED:
                setattr(stats, f, saved[f])
            t0 -= saved["seconds"]
    while stats.steps < total_steps and not stats.stopped:
        epoch_batches = batches(epoch)
        per_epoch = sum(len(b) for b in epoch_batches)
        if not per_epoch and not local:
            raise UserError(f"{scope.stage}: no training data")
        for done, items in enumerate(epoch_batches):
            if done < skip:  # stepped on before the checkpoint this run resumed from
                continue
            if stats.steps >= total_steps:
                break
            stats.stopped = _stop_reason(stop, stats, scope)
            if stats.stopped:
                break
            if schedule is not None:
                for e in engines.values():
                    e.set_lr(schedule.at(stats.steps, total_steps))
            t_step = time.perf_counter()
            out = _step(engines, loss_fn, list(items), local, micro, cost, known)
            out.seconds = time.perf_counter() - t_step
            pending.append(out)
            stats.steps += 1
            stats.items += len(items)
            seen += len(items)
            stats.epochs = epoch + seen / max(per_epoch, 1)
            logs = stats.steps % log_every == 0 or stats.steps == total_steps
            due = ckpt is not None and ckpt.due(stats.steps, total_steps)
            if eager or logs or due:
                settle()
            if logs:
                _log(stats, window, scope, t0, on_log)
            if ckpt is not None and due:
                ckpt.save(engines, {
                    "epoch": epoch, "batches_done": done + 1, "seen": seen, "window": window,
                    "totals": totals, "seconds": time.perf_counter() - t0,
                    **{f: getattr(stats, f) for f in _RESUMED}}, key, scope)
        else:
            settle()
            epoch += 1
            stats.seconds = time.perf_counter() - t0
            if on_epoch is not None and on_epoch(epoch, stats):
                stats.stopped = "callback"
            for e in engines.values():
                e.module.train()
        skip = seen = 0
    settle()
    if window:
        _log(stats, window, scope, t0, None)
    stats.means = {k: v / max(stats.steps, 1) for k, v in totals.items()}
    stats.seconds = time.perf_counter() - t0
    for e in engines.values():
        e.module.eval()
    return stats


def _stop_reason(stop: Callable[[LoopStats], bool] | None, stats: LoopStats,
                 scope: Scope) -> str:
    if stop is not None and stop(stats):
        return "stop"
    if scope.exhausted():
        return "budget"
    return ""


def _report(scope: Scope, row: dict, engines: dict[str, Any], tokens: int,
            seconds: float) -> None:
    """The step's statistics to the run's recording (``--report-to``)."""
    lrs: dict[str, Any] = {("lr" if not n else f"{n}_lr"): getattr(e, "lr", None)
                           for n, e in engines.items()}
    telemetry.train_step(scope.stage, {**row, **lrs}, tokens=tokens, seconds=seconds,
                         flops=scope.flops)


def _log(stats: LoopStats, window: list[dict], scope: Scope, t0: float,
         on_log: Callable[[LoopStats], None] | None) -> None:
    keys = list(dict.fromkeys(k for row in window for k in row))
    mean = {k: sum(r.get(k, 0.0) for r in window) / len(window) for k in keys}
    stats.loss = mean.get("loss", float("nan"))
    stats.seconds = time.perf_counter() - t0
    row = {"step": stats.steps, "epochs": round(stats.epochs, 3), **mean}
    if scope.ledger is not None:
        row["flops"] = scope.ledger.total_flops
    row["seconds"] = round(stats.seconds, 2)
    stats.history.append(row)
    window.clear()
    if on_log is not None:
        on_log(stats)


@dataclass
class _StepOut:
    """One optimizer step's statistics: ``vec`` = [weight, tokens, statistic * weight sums...,
    counts...] of this rank, or summed over ranks once ``summed``; ``row``: one process's
    statistics as the loss gave them (bit-exact, nothing divided)."""

    vec: list[float]
    keys: list[str]
    ckeys: list[str]
    grads: dict[str, float]
    summed: bool
    row: dict[str, float] | None = None
    seconds: float = 0.0

    def result(self) -> tuple[dict, dict[str, int]]:
        """(statistics with ``_tokens``, counts) of the step, over all ranks."""
        n = len(self.keys)
        counts = {k: int(v) for k, v in zip(self.ckeys, self.vec[2 + n :])}
        if self.row is not None:
            return {**self.row, **self.grads, "_tokens": int(self.vec[1])}, counts
        total_w = max(self.vec[0], 1e-12)
        row = {k: v / total_w for k, v in zip(self.keys, self.vec[2 : 2 + n])}
        return {**row, **self.grads, "_tokens": int(self.vec[1])}, counts


def _summed(outs: list[_StepOut]) -> list[_StepOut]:
    """``outs`` with every rank's share summed: one collective for all the unsummed ones (the
    ranks settle the same steps at the same points, so their vectors line up)."""
    todo = [o for o in outs if not o.summed]
    if todo:
        flat = dist.all_sum([v for o in todo for v in o.vec])
        at = 0
        for o in todo:
            o.vec, o.summed = flat[at : at + len(o.vec)], True
            at += len(o.vec)
    return outs


def _step(engines: dict[str, Any], loss_fn: Callable[[list[Any]], LossOut],
          items: list[Any], local: bool = False, micro: int = 0,
          cost: Callable[[Any], float] | None = None,
          weight: Callable[[Any], float] | None = None) -> _StepOut:
    """One optimizer step of every engine on this rank's share of ``items`` (``local``: the
    items are this rank's already), ``micro`` items per forward/backward (0: all at once); the
    step's statistics (weighted sums over micro-batches; summed over ranks here unless
    ``weight`` says the batch's total weight), its tokens and its counts."""
    world = dist.world_size()
    mine = (items if world == 1 or local else dist.shard(items) if cost is None
            else dist.balanced_shard(items, cost))
    parts = micro_batches(mine, micro) if mine else [items[:1]]  # weight 0 without items
    accumulate = len(parts) > 1
    w = 0.0
    tokens = 0
    sums: dict[str, float] = {}  # statistic * weight, summed over micro-batches
    counts: dict[str, int] = {}
    for part in parts:
        out = loss_fn(part)
        losses = out.loss if isinstance(out.loss, dict) else {"": out.loss}
        stats = {k: float(v) for k, v in out.stats.items()}
        for name, loss in losses.items():
            stats.setdefault("loss" if not name else f"{name}_loss", float(loss.detach()))
        pw = float(out.weight) if mine else 0.0
        w += pw
        tokens += out.tokens if mine else 0
        for k, v in stats.items():
            sums[k] = sums.get(k, 0.0) + v * pw
        for k, v in out.counts.items():
            counts[k] = counts.get(k, 0) + (v if mine else 0)
        if accumulate:  # gradient of sum(weight * mean loss); update() divides by the total
            for name, loss in losses.items():
                engines[name].backward(loss * pw)
    keys, ckeys = sorted(sums), sorted(counts)
    vec = [w, tokens, *(sums[k] for k in keys), *(counts[k] for k in ckeys)]
    if world == 1:
        if not accumulate:  # nothing scaled: bit-exact with the whole batch's loss
            grads = {_grad_key(n): engines[n].step(loss) for n, loss in losses.items()}
            return _StepOut(vec, keys, ckeys, grads, True, row=stats)
        grads = {_grad_key(n): engines[n].update(1.0 / max(w, 1e-12)) for n in losses}
        return _StepOut(vec, keys, ckeys, grads, True)
    if weight is None:  # the ranks meet before the backward to learn the batch's weight
        vec = dist.all_sum(vec)
        total_w = max(vec[0], 1e-12)
    else:
        total_w = max(float(sum(weight(x) for x in items)), 1e-12)
        if abs(w - sum(weight(x) for x in mine)) > 1e-9 * max(1.0, abs(w)):
            raise ValueError(f"loss weight {w} is not the sum of its items' weights")
    grads = {}
    for name, loss in losses.items():  # the engine averages over ranks: scale by world
        grads[_grad_key(name)] = (engines[name].update(world / total_w) if accumulate else
                                  engines[name].step(loss * (world * w / total_w)))
    return _StepOut(vec, keys, ckeys, grads, weight is None)


def micro_batches(items: Sequence[Any], micro: int) -> list[list[Any]]:
    """``items`` in order, cut into the fewest parts of at most ``micro`` items, balanced
    (sizes differ by at most one); ``micro`` 0 = one part."""
    n = len(items)
    if micro < 0:
        raise ValueError(f"micro_batch must be >= 0, got {micro}")
    k = max(1, math.ceil(n / micro)) if micro else 1
    return [list(items[n * i // k : n * (i + 1) // k]) for i in range(k)]


def _micro_batch(engines: dict[str, Any]) -> int:
    """The engines' ``micro_batch`` (``EngineConfig.micro_batch``; 0 = whole batches)."""
    sizes = {int(getattr(e, "micro_batch", 0) or 0) for e in engines.values()}
    if len(sizes) > 1:
        raise ValueError(f"engines stepped together need one micro_batch, got {sorted(sizes)}")
    return sizes.pop()


def _grad_key(name: str) -> str:
    return "grad_norm" if not name else f"{name}_grad_norm"
