"""Every baseline trains on arith through ``run_training`` and writes results.json; the
comparison command collects them into one table (a tiny random policy, a tiny FLOP budget)."""

import json

import pytest
from _bench import bench_script

from dapo_bench.errors import UserError
from dapo_bench.results import load_results

pytestmark = pytest.mark.integration  # launches processes, trains or kills runs (conftest)

BASELINES = ("sft", "rft", "dpo", "grpo", "ppo")


def test_all_baselines_at_one_budget(tiny_model, tmp_path, capsys):
    cm = bench_script("compare_methods")
    budget = 4e8
    sets = ["grpo:max_new_tokens=12", "grpo:prompts_per_step=4", "ppo:max_new_tokens=12",
            "ppo:rollout_batch=16", "rft:n_problems=8", "rft:max_new_tokens=12",
            "dpo:n_problems=8", "dpo:max_new_tokens=12"]
    cm.main(budget_flops=budget, methods=",".join(BASELINES), out=str(tmp_path / "s{seed}"),
            model=tiny_model, eval_limit=4, seed=0, set_=sets, threads=1, quiet=True)
    tmp_path = tmp_path / "s0"  # {seed} in --out is the seed (the default is .../seeds/s{seed})
    table = capsys.readouterr().out
    for m in ("base",) + BASELINES:
        res = load_results(tmp_path / m / "results.json")
        assert res["method"] == m
        assert set(res["tasks"]) == {"arith", "arith_ood"}
        assert f"| {m} |" in table
    for m in BASELINES:
        res = json.loads((tmp_path / m / "results.json").read_text())
        led = res["ledger"]
        assert led["budget_flops"] == budget and 0 < led["flops"]
        assert res["config"]["preset"] == "toy"
    # online methods stop at the first step boundary past the budget
    for m in ("sft", "grpo", "ppo"):
        res = json.loads((tmp_path / m / "results.json").read_text())
        assert res["ledger"]["flops"] >= budget
    assert (tmp_path / "comparison.md").read_text().startswith("Equal-compute comparison")


def test_compare_rejects_bad_input(tmp_path, tiny_model):
    cm = bench_script("compare_methods")
    with pytest.raises(UserError, match="unknown method 'nope'"):
        cm.main(methods="nope", out=tmp_path, model=tiny_model, set_=[], quiet=True)
    with pytest.raises(UserError, match="expected METHOD:key=value"):
        cm.main(methods="sft", out=tmp_path, model=tiny_model, set_=["max_new_tokens=3"],
                quiet=True)


def test_bad_online_config_fails_before_work(tiny_model, tmp_path):
    from dapo_bench.run import RunOptions, run_training

    opts = RunOptions(model=tiny_model, out=str(tmp_path), control=False, quiet=True)
    with pytest.raises(UserError, match="unknown loss aggregation 'dapo'"):
        run_training("grpo", opts, overrides=["loss_agg=dapo"])
    with pytest.raises(UserError, match="kl_mode: expected reward|loss"):
        run_training("ppo", opts, overrides=["kl_mode=sometimes"])
    with pytest.raises(UserError, match="unknown field 'betaa'"):
        run_training("dpo", opts, overrides=["betaa=0.1"])
    assert not list(tmp_path.glob("*/policy"))
