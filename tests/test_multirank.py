"""Rank helpers (``dapo_bench.dist``) without a process group: launcher env, solo
sections, batch sharding, and the "several ranks need --deepspeed" error."""

import pytest

from dapo_bench import dist
from dapo_bench.errors import UserError


@pytest.fixture
def launcher(monkeypatch):
    def set_env(rank: int, world: int) -> None:
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", str(world))

    for k in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(k, raising=False)
    # an earlier DeepSpeed test in this process may have made a one-process group
    monkeypatch.setattr(dist, "_initialised", lambda: False)
    return set_env


def test_plain_process_is_rank_0_of_1_and_collectives_are_no_ops(launcher):
    assert (dist.rank(), dist.world_size(), dist.is_main()) == (0, 1, True)
    dist.barrier()
    assert dist.broadcast({"a": 1}) == {"a": 1}
    assert dist.all_sum([1, 2.5]) == [1.0, 2.5]


def test_launcher_env_gives_rank_and_world(launcher):
    launcher(3, 4)
    assert (dist.rank(), dist.world_size(), dist.is_main()) == (3, 4, False)
    launcher(0, 4)
    assert dist.is_main()


def test_bad_launcher_env_is_a_user_error(launcher, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(UserError, match=r"\$WORLD_SIZE: expected an integer, got 'two'"):
        dist.world_size()


def test_solo_makes_rank_0_a_one_process_run(launcher):
    launcher(0, 2)
    with dist.solo():
        assert (dist.world_size(), dist.in_solo()) == (1, True)
        dist.barrier()  # a no-op inside: no process group is needed
        assert dist.all_sum([3]) == [3.0]
    assert (dist.world_size(), dist.in_solo()) == (2, False)
    launcher(1, 2)
    with pytest.raises(RuntimeError, match="only rank 0"), dist.solo():
        pass


@pytest.mark.parametrize("n,world", [(10, 3), (8, 2), (2, 4), (0, 2), (7, 1)])
def test_shards_are_disjoint_balanced_and_cover_the_batch(n, world):
    items = list(range(n))
    shards = [dist.shard(items, r, world) for r in range(world)]
    assert [x for s in shards for x in s] == items  # in order, each item once
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1
    assert dist.shard_bounds(n, world - 1, world)[1] == n


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("world", [1, 2, 3])
def test_cost_balanced_shards_cover_the_batch_and_share_its_cost(seed, world):
    import random

    rng = random.Random(seed)
    items = [(k, rng.choice([1, 2, 3, 50, 200])) for k in range(rng.randint(0, 40))]
    shards = [dist.balanced_shard(items, lambda x: x[1], r, world) for r in range(world)]
    assert sorted(x for s in shards for x in s) == items  # each item once
    assert all(s == sorted(s) for s in shards)  # a share keeps the batch's order
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1
    costs = [sum(c for _, c in s) for s in shards]
    assert max(costs) - min(costs) <= max((c for _, c in items), default=0)  # within one item
    # the case that made it: the costly items first, cut by count, gave one rank all of them
    front = [9, 8, 7, 6, 1, 1, 1, 1]
    assert [sum(dist.shard(front, r, 2)) for r in range(2)] == [30, 4]
    assert [sum(dist.balanced_shard(front, float, r, 2)) for r in range(2)] == [17, 17]


@pytest.mark.parametrize("world", [1, 2, 3, 8])
@pytest.mark.parametrize("chunk", [1, 15, 64])
def test_balanced_chunks_give_every_rank_its_share(world, chunk):
    # eval deals chunk k to rank k % world: with 30 problems and chunks of 64 on 2 ranks one
    # chunk of 30 left rank 1 idle (seen: SmolLM2 on AIME24, one core at 100%, one at 6%)
    for n in range(300):
        items = list(range(n))
        chunks = dist.even_chunks(items, chunk, world)
        assert [x for c in chunks for x in c] == items  # in order, each item once
        assert all(1 <= len(c) <= chunk for c in chunks)
        if world > 1:  # one process keeps plain chunks of ``chunk``, the last one the rest
            assert max(map(len, chunks), default=0) - min(map(len, chunks), default=0) <= 1
        assert len(chunks) % world == 0 or len(chunks) == n  # a first chunk for every rank
        if n >= world:
            assert len(chunks) >= world, (n, chunk, world)  # no rank idles from the start


def test_shard_rejects_a_rank_outside_the_world():
    with pytest.raises(ValueError, match="rank 2 of world 2"):
        dist.shard_bounds(4, 2, 2)


def test_shard_defaults_to_this_rank(launcher):
    launcher(1, 2)
    assert dist.shard("abcde") == ["c", "d", "e"]
