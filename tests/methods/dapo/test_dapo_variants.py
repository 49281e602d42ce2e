"""``bench/dapo_variants.py``: a DAPO variant that shares a finished run's unchanged stages
gives what the same variant gives from scratch (ledger, artifacts, final weights), and shares
exactly the stages whose inputs it leaves alone."""

import copy
import json

from _bench import bench_script
from safetensors.torch import load_file

SETS = ["n_problems=8", "n_samples=2", "n_rollouts=2", "mc_samples=2", "max_new_tokens=10",
        "gen_chunk=4", "critic.epochs=1", "actor.epochs=1", "min_spread=0"]


def _saved(**config):
    cfg = {"beta": 0.5, "iterations": 1, "n_problems": 8, "advantage": "mc", "mc_prior": 1.0,
           "min_spread": 0.1, "critic": {"epochs": 1}, "actor": {"epochs": 1}}
    cfg.update(config)
    return {"method": "dapo", "options": {"seed": 0, "model": "m", "budget_flops": 1e9,
                                          "run_id": "a", "eval_limit": None}, "config": cfg}


def test_shared_stages_follow_the_pipeline_order():
    v = bench_script("dapo_variants")
    base = _saved()
    assert v.shared_stages(base, _saved(beta=0.1)) == ["rollouts", "states", "mc", "critic",
                                                      "advantages"]
    assert v.shared_stages(base, _saved(advantage="critic")) == ["rollouts", "states", "mc",
                                                                 "critic"]
    assert v.shared_stages(base, _saved(critic={"epochs": 3})) == ["rollouts", "states", "mc"]
    assert v.shared_stages(base, _saved(n_problems=16)) == []
    seed1 = copy.deepcopy(base)
    seed1["options"]["seed"] = 1
    assert v.shared_stages(base, seed1) == []
    # two iterations at twice the budget: iteration 1 is the one-iteration run, actor included
    it2 = _saved(iterations=2)
    it2["options"]["budget_flops"] = 2e9
    assert v.shared_stages(base, it2)[-1] == "actor"
    it2["options"]["budget_flops"] = 1e9  # same total budget: iteration 1 gets half of it
    assert v.shared_stages(base, it2) == []


def test_a_variant_sharing_stages_equals_the_variant_from_scratch(model_dir, tmp_path, capsys):
    from dapo_bench.run import RunOptions, run_training

    opts = {"model": model_dir, "eval_limit": 3, "eval_max_new_tokens": 6, "control": False,
            "out": str(tmp_path), "quiet": True}
    run_training("dapo", RunOptions(**opts, run_id="base"), preset="toy", overrides=SETS)
    run_training("dapo", RunOptions(**opts, run_id="scratch"), preset="toy",
                 overrides=[*SETS, "beta=0.2"])
    capsys.readouterr()
    bench_script("dapo_variants").main(from_=tmp_path / "base", run_id="shared",
                                       set_=["beta=0.2"], out=None, budget_flops=None,
                                       control=False, eval_tasks=None, threads=1)
    err = capsys.readouterr().err
    assert "shares rollouts, states, mc, critic, advantages, eval.reference with" in err
    assert "stage it1.mc: done before, skipped" in err and "stage it1.actor: start" in err
    shared, scratch = tmp_path / "shared", tmp_path / "scratch"
    a = json.loads((shared / "results.json").read_text())
    b = json.loads((scratch / "results.json").read_text())
    assert a["ledger"] == b["ledger"] and a["config"]["config"] == b["config"]["config"]
    for name in ("rollouts.jsonl", "states.jsonl", "mc.jsonl", "advantages.jsonl"):
        assert (shared / "it1" / name).read_bytes() == (scratch / "it1" / name).read_bytes()
    wa = load_file(shared / "it1" / "actor" / "model.safetensors")
    wb = load_file(scratch / "it1" / "actor" / "model.safetensors")
    assert all((wa[k] == wb[k]).all() for k in wb)
    # the copied stages keep the base's markers (its seconds too)
    marker = json.loads((shared / "stages" / "it1.critic.json").read_text())
    assert marker == json.loads((tmp_path / "base" / "stages" / "it1.critic.json").read_text())


def test_a_base_without_its_artifacts_shares_only_what_is_there(tmp_path):
    # committed runs keep markers and evals but not the JSONL artifacts (.gitignore): on a fresh
    # clone a variant computes every stage itself and still takes the reference's evaluation
    v = bench_script("dapo_variants")
    base, run = tmp_path / "base", tmp_path / "variant"
    (base / "stages").mkdir(parents=True)
    (base / "eval" / "reference").mkdir(parents=True)
    (base / "eval" / "reference" / "results.json").write_text("{}")
    for name in ("it1.rollouts", "it1.states", "eval.reference"):
        (base / "stages" / f"{name}.json").write_text("{}")
    # without its samples the reference eval cannot be paired with: it is evaluated again
    assert v.copy_stages(base, run, ["rollouts", "states", "mc"], eval_ref=True) == []
    (base / "eval" / "reference" / "samples.jsonl").write_text("")
    assert v.copy_stages(base, run, ["rollouts", "states", "mc"], eval_ref=True) == [
        "eval.reference"]
    assert not (run / "it1").exists() and (run / "stages" / "eval.reference.json").is_file()
    assert (run / "eval" / "reference" / "results.json").is_file()
    (base / "it1").mkdir()
    (base / "it1" / "rollouts.jsonl").write_text("")
    assert v.copy_stages(base, tmp_path / "v2", ["rollouts", "states"], eval_ref=False) == [
        "rollouts"]
