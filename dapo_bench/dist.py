"""Rank helpers for runs under ``torchrun`` / the ``deepspeed`` launcher (and plain processes).

``rank()``, ``world_size()``, ``is_main()`` read the process group when one is initialised and
the launcher's ``RANK`` / ``WORLD_SIZE`` otherwise, so a plain process is rank 0 of 1 and needs
no ``torch.distributed``. ``barrier()``, ``broadcast()`` and ``all_sum()`` are no-ops in one
process; with several they join (or first create, see :func:`ensure_group`) the launcher's
process group (gloo on CPU, NCCL on GPUs; DeepSpeed's engine adopts it).

``solo()`` marks a section that only rank 0 runs (bookkeeping stages): inside it rank 0 behaves
as a single process (``world_size() == 1``, collectives are no-ops), so code shared with
training (e.g. ``save_policy``) neither waits for nor talks to the other ranks.

Every rank does its share: ``shard(items)`` is this rank's contiguous, balanced slice of a global
batch (training); a :class:`WorkQueue` deals the chunks of a generation stage to the ranks as
they become free (a chunk's seed is its index, so what a chunk holds does not depend on which
rank makes it or on the number of ranks); ``all_gather(obj)`` gives every rank's object,
``map_shards(items, fn)`` runs ``fn`` on this rank's slice and returns every rank's results in
item order.
``gathered(module)``: ZeRO-3 partitioned parameters gathered for the ``with`` body (a no-op for
other modules); every rank must enter it (it is a collective).

A group this module or the DeepSpeed engine makes is destroyed at interpreter exit
(:func:`leave_group_at_exit`).

Not covered: tensor/pipeline parallel groups (one data-parallel group), elastic restarts.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from dapo_bench.errors import UserError

T = TypeVar("T")
_SOLO = [False]
_QUEUES = [0]  # WorkQueues created by this process: the next one's store key
# ranks other than 0 wait at barriers while rank 0 generates and evaluates: allow long waits
TIMEOUT = timedelta(hours=float(os.environ.get("DAPO_BENCH_DIST_TIMEOUT_H", "12")))


def _initialised() -> bool:
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a hard dependency
        return False
    return dist.is_available() and dist.is_initialized()


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        return int(raw) if raw else default
    except ValueError:
        raise UserError(f"${name}: expected an integer, got {raw!r}") from None


def _query(getter: str, env: str, solo_value: int) -> int:
    """``torch.distributed.<getter>()`` once a group exists, else the launcher's ``$env``."""
    if _SOLO[0]:
        return solo_value
    if _initialised():
        import torch.distributed as dist

        return getattr(dist, getter)()
    return _env_int(env, solo_value)


def world_size() -> int:
    """Processes in the run (1 inside :func:`solo` and in a plain process)."""
    return _query("get_world_size", "WORLD_SIZE", 1)


def rank() -> int:
    """This process's rank (0 in a plain process)."""
    return _query("get_rank", "RANK", 0)


def is_main() -> bool:
    return rank() == 0


def ensure_group() -> None:
    """Join the launcher's process group (``env://``: RANK, WORLD_SIZE, MASTER_ADDR/PORT).

    gloo on CPU; on GPUs NCCL, with this rank's device (LOCAL_RANK) set first."""
    if _initialised() or world_size() == 1:
        return
    import torch
    import torch.distributed as dist

    keep_scratch_per_node()

    backend = "gloo"
    if torch.cuda.is_available():
        torch.cuda.set_device(_env_int("LOCAL_RANK", 0))
        backend = "nccl"
    dist.init_process_group(backend=backend, timeout=TIMEOUT)
    leave_group_at_exit()


def leave_group_at_exit() -> None:
    """Destroy the process group when the interpreter exits (registered where a group is
    made). Without it the group's threads outlive Python's shutdown: a rank that had finished
    its work could die of ``terminate called without an active exception`` (SIGABRT) at exit,
    and torchrun then reports the whole run failed."""
    import atexit

    atexit.register(_leave_group)


def _leave_group() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def keep_scratch_per_node() -> None:
    """Key node-local scratch by host on a run over several nodes (a no-op on one node):
    ``$TORCH_EXTENSIONS_DIR`` defaults to a folder per host (docs: :mod:`dapo_bench.nodes`)."""
    local = os.environ.get("LOCAL_WORLD_SIZE")
    if local is None or int(local) >= world_size():
        return
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    os.environ.setdefault("TORCH_EXTENSIONS_DIR",
                          str(base / "torch_extensions" / socket.gethostname()))


def barrier() -> None:
    if world_size() > 1:
        ensure_group()
        import torch.distributed as dist

        dist.barrier()


def broadcast(obj: T) -> T:
    """Rank 0's ``obj`` on every rank (a picklable object)."""
    if world_size() == 1:
        return obj
    ensure_group()
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def all_sum(values: Sequence[float]) -> list[float]:
    """Element-wise sum of ``values`` over ranks (float64)."""
    if world_size() == 1:
        return [float(v) for v in values]
    ensure_group()
    import torch
    import torch.distributed as dist

    t = torch.tensor([float(v) for v in values], dtype=torch.float64)
    dist.all_reduce(t)
    return t.tolist()


def all_gather(obj: T) -> list[T]:
    """Every rank's ``obj`` (picklable), in rank order; ``[obj]`` in one process."""
    if world_size() == 1:
        return [obj]
    ensure_group()
    import torch.distributed as dist

    out: list[Any] = [None] * world_size()
    dist.all_gather_object(out, obj)
    return out


class WorkQueue:
    """The ``n`` chunks of a generation stage, dealt to the ranks as they become free.

    Iterating gives the indices of the chunks this rank makes: chunk ``rank`` first (so every
    rank has work from the start, whatever its start-up time), then whichever chunk no rank has
    taken yet, from a counter in the process group's store. A rank whose chunks run short takes
    more instead of idling while another works through a harder share (seen with fixed
    round-robin shares: OlympiadBench on 2 CPU ranks, one rank done 557 s before the other).
    Which rank makes which chunk then depends on timing, so it is only for work whose results
    depend on a chunk's index, not on its rank. Every rank must create a run's queues in the
    same order (a queue's store keys are its sequence number). One process: the chunks in order.
    ``done(k, kind)`` adds ``k`` items finished here to the stage's ``kind`` count and returns
    that count over all ranks so far (progress shows the stage's, not one rank's).
    """

    def __init__(self, n: int):
        self.n, self.world, self.rank = n, world_size(), rank()
        self._done: dict[str, int] = {}
        self._store: Any = None
        if self.world > 1:
            ensure_group()
            from torch.distributed import distributed_c10d

            self._store = distributed_c10d._get_default_store()
            _QUEUES[0] += 1
            self._key = f"dapo_bench/queue/{_QUEUES[0]}"

    def __iter__(self) -> Iterator[int]:
        if self._store is None:
            yield from range(self.n)
            return
        if self.rank < self.n:
            yield self.rank
        while (k := self.world - 1 + int(self._store.add(f"{self._key}/next", 1))) < self.n:
            yield k

    def done(self, items: int, kind: str = "done") -> int:
        if self._store is None:
            self._done[kind] = self._done.get(kind, 0) + items
            return self._done[kind]
        return int(self._store.add(f"{self._key}/{kind}", items))


def even_chunks(items: Sequence[T], chunk: int, world: int | None = None) -> list[list[T]]:
    """``items`` cut in order into chunks of at most ``chunk``, their number a multiple of the
    world size (as long as there are items for it) and their sizes within one of each other, so
    every rank gets a first chunk of the same size (a :class:`WorkQueue` starts rank r on chunk
    r): 30 problems with ``chunk`` 64 on 2 ranks are 2 chunks of 15, not one chunk of 30 that
    leaves rank 1 idle; 70 are 35 + 35, not 64 + 6. One process keeps plain chunks of
    ``chunk``. Only for work whose results do not depend on how it is cut (eval: per-sample
    seeds; the training stages seed each chunk by its index and keep their ``gen_chunk``)."""
    w = world_size() if world is None else world
    n, chunk = len(items), max(chunk, 1)
    if n == 0:
        return []
    if w == 1:  # one process: plain chunks of ``chunk`` (the last one the rest)
        return [list(items[i : i + chunk]) for i in range(0, n, chunk)]
    k = (n + chunk - 1) // chunk  # chunks of at most ``chunk``
    k = min(n, (k + w - 1) // w * w)  # rounded up to a multiple of the world, an item each
    bounds = [(i * n + k - 1) // k for i in range(k + 1)]  # ceil: the larger chunks first
    return [list(items[a:b]) for a, b in itertools.pairwise(bounds)]


def map_shards(items: Sequence[Any], fn: Any) -> list[Any]:
    """``fn(this rank's slice) -> one result per item``, gathered: every rank gets the results
    of all items, in item order (a collective; in one process just ``fn(items)``)."""
    if world_size() == 1:
        return list(fn(list(items)))
    mine = fn(shard(items))
    return [x for part in all_gather(list(mine)) for x in part]


@contextlib.contextmanager
def solo() -> Iterator[None]:
    """A section only rank 0 runs: inside it, rank 0 is a one-process run."""
    if not is_main():
        raise RuntimeError("solo(): only rank 0 runs rank-0 sections")
    old, _SOLO[0] = _SOLO[0], True
    try:
        yield
    finally:
        _SOLO[0] = old


def in_solo() -> bool:
    return _SOLO[0]


def shard_bounds(n: int, rank: int, world: int) -> tuple[int, int]:
    """[start, end) of rank ``rank``'s slice of ``n`` items: contiguous, sizes differ by <= 1
    (empty for some ranks when ``n < world``)."""
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"shard: rank {rank} of world {world}")
    return n * rank // world, n * (rank + 1) // world


def shard(items: Sequence[T], rank_: int | None = None, world: int | None = None) -> list[T]:
    """This rank's slice of ``items`` (see :func:`shard_bounds`); the whole list in one process."""
    r = rank() if rank_ is None else rank_
    w = world_size() if world is None else world
    lo, hi = shard_bounds(len(items), r, w)
    return list(items[lo:hi])


def balanced_shard(items: Sequence[T], cost: Callable[[T], float], rank_: int | None = None,
                   world: int | None = None) -> list[T]:
    """This rank's share of ``items`` with the shares' total ``cost`` balanced: the items dealt
    by decreasing cost in snake order (ranks 0..w-1, then w-1..0, ...; ties by position), so
    that sizes differ by at most one and each share holds as many of the costliest items; each
    share keeps the items' own order. Every rank computes the same split from the same items."""
    r = rank() if rank_ is None else rank_
    w = world_size() if world is None else world
    if w == 1:
        return list(items)
    shard_bounds(len(items), r, w)  # checks rank and world
    order = sorted(range(len(items)), key=lambda i: (-cost(items[i]), i))
    mine = [i for k, i in enumerate(order)
            if (k % w if (k // w) % 2 == 0 else w - 1 - k % w) == r]
    return [items[i] for i in sorted(mine)]


def partitioned(module: Any) -> bool:
    """Whether ``module`` has ZeRO-3 partitioned parameters (its forwards are collectives)."""
    return any(hasattr(p, "ds_status") for p in module.parameters())


@contextlib.contextmanager
def gathered(module: Any) -> Iterator[None]:
    """ZeRO-3: gather ``module``'s partitioned parameters for the body (collective); no-op for
    modules without partitioned parameters."""
    from_ds = [p for p in module.parameters() if hasattr(p, "ds_status")]
    if not from_ds:
        yield
        return
    import deepspeed
    from deepspeed.runtime.zero.partition_parameters import ZeroParamStatus

    todo = [p for p in from_ds if p.ds_status == ZeroParamStatus.NOT_AVAILABLE]
    with deepspeed.zero.GatheredParameters(todo, enabled=bool(todo)):
        yield
