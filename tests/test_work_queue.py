"""``dist.WorkQueue``: the chunks of a generation stage go to whichever rank is free (2 CPU
ranks under torchrun, gloo), so a rank that draws slow chunks does not hold the stage up while
the other idles; in one process the chunks come in order."""

import json
import os
import sys
import textwrap

from _launch import rank_env, run_ranks

from dapo_bench import dist

# Rank 1's first chunk is slow: it lasts until rank 0 has run out of chunks (a FIFO: rank 1's
# open for reading blocks until rank 0 opens it for writing after its loop), so the shares are
# exact whatever the machine's speed.
SCRIPT = textwrap.dedent("""
    import json, sys
    from dapo_bench import dist

    out, fifo = sys.argv[1], sys.argv[2]
    first = dist.WorkQueue(20)
    mine = []
    for k in first:
        mine.append(k)
        if dist.rank() == 1:
            open(fifo).close()  # slow: until rank 0 has taken every other chunk
    if dist.rank() == 0:
        open(fifo, "w").close()
    counted = first.done(len(mine))
    dist.barrier()
    total = first.done(0)
    second = list(dist.WorkQueue(3))  # a later queue starts again from its first chunk
    with open(f"{out}.{dist.rank()}", "w") as f:
        json.dump({"mine": mine, "counted": counted, "total": total, "second": second}, f)
""")


def test_one_process_takes_every_chunk_in_order():
    queue = dist.WorkQueue(5)
    assert list(queue) == [0, 1, 2, 3, 4]
    assert queue.done(2) == 2 and queue.done(3) == 5 and queue.done(1, "old") == 1
    assert list(dist.WorkQueue(0)) == []


def test_a_free_rank_takes_the_chunks_a_slow_rank_has_not_started(tmp_path):
    script = tmp_path / "ranks.py"  # not queue.py: it would shadow the stdlib module
    script.write_text(SCRIPT)
    out, fifo = tmp_path / "got", tmp_path / "slow"
    os.mkfifo(fifo)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
           "2", str(script), str(out), str(fifo)]
    run = run_ranks(cmd, rank_env(), timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    got = [json.loads((tmp_path / f"got.{r}").read_text()) for r in (0, 1)]
    zero, one = got[0]["mine"], got[1]["mine"]
    # each rank starts on its own chunk; fixed round-robin shares would give 10 each, but the
    # free rank makes every chunk while the slow one is on its first
    assert one == [1] and zero == [0, *range(2, 20)], (zero, one)
    assert all(g["total"] == 20 for g in got)  # done() counts over both ranks
    assert max(g["counted"] for g in got) == 20
    assert sorted(got[0]["second"] + got[1]["second"]) == [0, 1, 2]
