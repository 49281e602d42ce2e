"""Several ranks evaluating several tasks agree on what is already logged: after a task, no rank
starts writing the next task's rows before every rank has read the last one's (2 CPU ranks
under torchrun). A rank that read late once saw the other rank's first rows of the next task,
cut that task into other chunks than the other rank did, and a problem was made by nobody (the
eval died with "sees no logged row"). Rank 0 here reads 1.5 s late after every sync."""

import sys
import textwrap

import pytest
from _launch import rank_env, run_ranks

from dapo_bench.io import read_jsonl

pytestmark = pytest.mark.integration  # launches processes, trains or kills runs (conftest)

SCRIPT = textwrap.dedent("""
    import sys, time
    from dapo_bench import dist
    from dapo_bench.eval import evaluate
    from dapo_bench.eval.store import SampleStore

    real, reads = SampleStore._read, []

    def late_read(self):  # a descheduled rank 0: every read after the one at open is late
        reads.append(1)
        if dist.rank() == 0 and len(reads) > 1:
            time.sleep(1.5)
        real(self)

    SampleStore._read = late_read
    evaluate(sys.argv[1], ["arith", "arith_ood"], run_dir=sys.argv[2], limit=6,
             max_new_tokens=8, quiet=True)
""")


def test_a_rank_that_reads_late_still_makes_its_share_of_the_next_task(model_dir, tmp_path):
    from dapo_bench.eval import evaluate

    script = tmp_path / "ranks.py"
    script.write_text(SCRIPT)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
           "2", str(script), model_dir, str(tmp_path / "two")]
    run = run_ranks(cmd, rank_env(), timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    evaluate(model_dir, ["arith", "arith_ood"], run_dir=tmp_path / "one", limit=6,
             max_new_tokens=8, quiet=True)
    two, one = (read_jsonl(tmp_path / d / "samples.jsonl") for d in ("two", "one"))
    for rows in (two, one):
        for r in rows:
            r.pop("seconds")
    assert two == one and len(two) == 12
