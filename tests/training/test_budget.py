"""Equal compute for real: ``--budget-flops F`` is a target every method reaches within 5%.

Each method runs through ``run_training`` on arith with the shipped reference policy, a tiny
setting and a small F: a method that would stop early (few problems, few epochs, few steps)
keeps going, and one that would overshoot stops at F. ``results.json`` says how.
"""

import json

import pytest
import torch
from _tiny import TINY

from dapo_bench.ledger import Ledger
from dapo_bench.run import RunOptions, run_training
from dapo_bench.training import budget

pytestmark = pytest.mark.integration  # launches processes, trains or kills runs (conftest)

F = 4e9


@pytest.mark.parametrize("method", sorted(TINY))
def test_every_method_reaches_the_flop_target(method, tmp_path):
    torch.set_num_threads(1)
    # trains on the 1,500-problem sft split (loading it is faster than rl_train's 20,000)
    opts = RunOptions(task="arith:sft", eval_limit=2, budget_flops=F, control=False, out=str(tmp_path),
                      run_id=method, quiet=True)
    res = run_training(method, opts, preset="toy", overrides=TINY[method])
    b = res["budget"]
    assert b["target_flops"] == F and b["spent_flops"] == res["ledger"]["flops"]
    assert abs(b["spent_flops"] / F - 1) <= budget.TOLERANCE and b["reached"], b
    # the tiny configured lengths alone would have stopped far short of F: it kept going
    assert b["how"]["stopped"] == "budget", b["how"]
    saved = json.loads((tmp_path / method / "results.json").read_text())
    assert saved["budget"] == b


def test_without_a_target_the_configured_length_is_the_limit():
    led = Ledger(n_params=10)
    assert budget.epochs(led, 3.0) == 3.0 and budget.steps(led, 7) == 7
    assert budget.problems(led, 100) == 100 and budget.report(led) is None
    led.budget_flops = 1000.0
    assert budget.epochs(led, 3.0) > 1e5 and budget.steps(led, 7) > 1e8
    assert budget.problems(led, 100) is None


def test_phase_lowers_the_stop_and_restores_it():
    led = Ledger(n_params=1, budget_flops=100.0)
    led.add_inf("a", 30)  # 60 FLOPs
    with budget.phase(led, budget.share(led, 0.0, 0.5)):
        assert led.budget_flops == 50.0 and led.exhausted()
    assert led.budget_flops == 100.0 and not led.exhausted()
    with budget.phase(led, 500.0):  # a phase never raises the budget
        assert led.budget_flops == 100.0
    rep = budget.report(led, {"epochs": 1.5})
    assert rep["ratio"] == 0.6 and not rep["reached"]
    assert "NOT within 5%" in budget.describe(rep) and "epochs 1.5" in budget.describe(rep)
