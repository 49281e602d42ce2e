"""``train_loop(weight=...)`` on two ranks: when every rank can compute the batch's total weight,
the step's statistics, tokens and counts are summed over ranks once a log window instead of
before every backward, and nothing else changes: the same history, tokens, counts and weights,
bit for bit, as the loop that meets every step. A ``stop`` rule or a FLOP budget reads every
step, so those loops still sum every step. A loss whose weight is not its items' is refused.
(torchrun, 2 CPU ranks, ~20 s.)
"""

import sys
from pathlib import Path

import pytest
import torch
from _launch import rank_env, run_ranks

pytestmark = pytest.mark.integration

RANK_SCRIPT = """
import sys, torch
from dapo_bench import dist
from dapo_bench.ledger import Ledger
from dapo_bench.training.engine import OptimConfig, make_engine
from dapo_bench.training.loop import LossOut, shuffled_batches, train_loop
from dapo_bench.training.scope import Scope

torch.set_num_threads(1)
calls = [0]
all_sum = dist.all_sum


def counted(values):
    calls[0] += 1
    return all_sum(values)


dist.all_sum = counted
gen = torch.Generator().manual_seed(0)
xs, ys = torch.randn(45, 4, generator=gen), torch.randn(45, generator=gen)


def run(weight=None, stop=None, budget=None, bad=False):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    engine = make_engine(model, OptimConfig(lr=0.05))

    def loss_fn(items):
        pred = model(xs[items]).squeeze(-1)
        loss = ((pred - ys[items]) ** 2).mean()
        return LossOut(loss, len(items) + bad, 3 * len(items), {"pred": float(pred.mean())},
                       {"rows": len(items)})

    calls[0] = 0
    scope = Scope("t", Ledger(n_params=5, budget_flops=budget))
    st = train_loop(engine, lambda e: shuffled_batches(45, 6, e), loss_fn, total_steps=10,
                    scope=scope, log_every=3, weight=weight, stop=stop)
    return {"history": [{k: v for k, v in r.items() if k != "seconds"} for r in st.history],
            "means": st.means, "tokens": st.tokens, "counts": st.counts,
            "ledger": scope.ledger.total_flops, "collectives": calls[0],
            "weights": {k: v.clone() for k, v in model.state_dict().items()}}


out = {"each": run(), "window": run(weight=lambda x: 1),
       "stop": run(weight=lambda x: 1, stop=lambda st: False),
       "budget": run(weight=lambda x: 1, budget=1e12)}
try:
    run(weight=lambda x: 1, bad=True)
except ValueError as e:
    out["bad"] = str(e)
if dist.is_main():
    torch.save(out, sys.argv[1])
"""


def test_known_weights_sum_the_statistics_once_a_log_window_and_change_nothing(tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(RANK_SCRIPT)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
           "2", str(script), str(tmp_path / "out.pt")]
    run = run_ranks(cmd, rank_env(PYTHONPATH=str(Path(__file__).resolve().parents[2])), 300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = torch.load(tmp_path / "out.pt")
    each, window = out["each"], out["window"]
    assert each["collectives"] == 10  # one all_sum a step, before its backward
    # 45 rows in batches of 6: 8 steps an epoch; log lines at steps 3, 6, 9 and the last (10),
    # and the epoch's end (8) settles what it has
    assert window["collectives"] == 5
    assert out["stop"]["collectives"] == out["budget"]["collectives"] == 10  # read every step
    for got in (window, out["stop"], out["budget"]):
        for key in ("history", "means", "tokens", "counts", "ledger"):
            assert got[key] == each[key], key
        assert all(torch.equal(got["weights"][k], v) for k, v in each["weights"].items())
    assert len(each["history"]) == 4 and each["tokens"] == 3 * (45 + 2 * 6)
    assert each["counts"] == {"rows": 45 + 2 * 6}
    assert "is not the sum of its items' weights" in out["bad"]
