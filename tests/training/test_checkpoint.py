"""Checkpoints inside a training stage: a loop killed part-way and rerun resumes at its last
checkpoint and ends exactly where an uninterrupted loop ends (weights, AdamW state, history,
tokens, ledger, RNG: the model has dropout); a checkpoint of another loop is ignored; a finished
stage's checkpoints are removed; through ``run_training`` an SFT run killed mid-stage and
resumed writes the same policy as one never killed, and a DAPO run killed in its critic stage,
then in its actor stage, writes the critic and actor of one never killed."""

from pathlib import Path

import pytest
import torch
from _resume import kill_and_resume, same_state, timeless

from dapo_bench.ledger import Ledger
from dapo_bench.training import checkpoint
from dapo_bench.training.engine import Engine, OptimConfig
from dapo_bench.training.loop import LossOut, shuffled_batches, train_loop
from dapo_bench.training.scope import Scope

pytestmark = pytest.mark.integration  # launches processes, trains or kills runs (conftest)

X = torch.randn(12, 4, generator=torch.Generator().manual_seed(0))
Y = X.sum(dim=1, keepdim=True)


class Killed(Exception):
    pass


def _run(ckpt_dir: Path | None, *, init_seed=0, kill_at=None, total=10, every=3):
    torch.manual_seed(init_seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5),
                                torch.nn.Linear(8, 1))
    engine = Engine(model, OptimConfig(lr=1e-2))
    ledger = Ledger(n_params=100)
    calls = []

    def loss_fn(items):
        calls.append(items)
        if kill_at is not None and len(calls) == kill_at:
            raise Killed
        out = engine.module(X[items])
        return LossOut(((out - Y[items]) ** 2).mean(), len(items), 10 * len(items),
                       counts={"rows": len(items)})

    torch.manual_seed(123)  # what a trainer does before its loop; a resume overrides it
    with checkpoint.stage_scope(ckpt_dir or Path("unused"), every if ckpt_dir else 0):
        stats = train_loop(engine, lambda ep: shuffled_batches(12, 4, ep), loss_fn,
                           total_steps=total, scope=Scope("train", ledger), log_every=2)
    return model, stats, ledger, calls


def test_a_killed_loop_resumes_at_its_checkpoint_and_ends_as_one_never_killed(tmp_path):
    whole, s0, led0, calls0 = _run(tmp_path / "a")
    with pytest.raises(Killed):
        _run(tmp_path / "b", kill_at=8)  # checkpoints at steps 3 and 6; dies in step 8
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["latest.json", "step6"]
    resumed, s1, led1, calls1 = _run(tmp_path / "b", init_seed=99)  # other init: replaced
    assert calls1 == calls0[6:]  # steps 7-10 only, on the same batches
    for a, b in zip(whole.state_dict().values(), resumed.state_dict().values()):
        assert torch.equal(a, b)
    assert timeless(s1.history) == timeless(s0.history) and s1.steps == s0.steps == 10
    assert (s1.tokens, s1.items, s1.epochs, s1.counts, s1.loss) == \
        (s0.tokens, s0.items, s0.epochs, s0.counts, s0.loss)
    assert s1.means == pytest.approx(s0.means, rel=1e-12)
    assert led1.stages["train"] == led0.stages["train"]  # every token charged once


def test_a_checkpoint_of_another_loop_is_ignored(tmp_path, capsys):
    with pytest.raises(Killed):
        _run(tmp_path / "c", kill_at=5)
    fresh, s_fresh, _, _ = _run(None, total=8)
    again, s_again, _, calls = _run(tmp_path / "c", total=8)  # other total steps
    assert "a checkpoint of another training loop" in capsys.readouterr().err
    assert len(calls) == 8 and timeless(s_again.history) == timeless(s_fresh.history)
    for a, b in zip(fresh.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)


def test_one_resumable_loop_a_stage():
    with checkpoint.stage_scope(Path("x"), 2):
        assert checkpoint.take() is not None
        with pytest.raises(RuntimeError, match="second resumable training loop"):
            checkpoint.take()
    assert checkpoint.take() is None  # outside a stage: no checkpoints


def test_sft_run_killed_mid_stage_resumes_to_the_same_policy(tmp_path, monkeypatch, capsys):
    from dapo_bench.models import load_policy
    from dapo_bench.training import sft

    kw = {"task": "arith", "eval_tasks": ("arith",), "eval_limit": 2}
    sets = ["epochs=0.005", "batch_size=8", "log_every=1"]
    whole, again = kill_and_resume(monkeypatch, tmp_path, "sft", kw, sets,
                                   [(sft, "sft_loss", "train")], preset="toy")
    assert timeless(again["history"]) == timeless(whole["history"]) and len(whole["history"]) >= 4
    n = len(whole["history"])  # log_every=1: a row a step; the bar counts 2 restored steps
    assert f"sft: done ({n}/{n} steps, {n - 2} new)" in capsys.readouterr().err
    same_state(load_policy(str(tmp_path / "whole" / "policy"))[0],
               load_policy(str(tmp_path / "k" / "policy"))[0])


def test_dapo_killed_in_its_critic_then_its_actor_resumes_each(model_dir, tmp_path, monkeypatch):
    from dapo_bench.io import read_json
    from dapo_bench.methods.dapo import actor, critic
    from dapo_bench.models import load_policy
    from dapo_bench.training.value import ValueModel

    sets = ["n_problems=12", "n_samples=2", "n_rollouts=2", "mc_samples=4", "max_new_tokens=12",
            "gen_chunk=4", "critic.epochs=1", "actor.epochs=1", "advantage=critic",
            "min_spread=0", "critic.batch_size=4", "actor.batch_actions=4"]
    kw = {"model": model_dir, "eval_limit": 6, "eval_max_new_tokens": 6}
    kill_and_resume(monkeypatch, tmp_path, "dapo", kw, sets,
                    [(critic, "soft_bce", "it1.critic"), (actor, "dapo_actor_loss", "it1.actor")])
    for stage in ("it1.critic", "it1.actor"):
        got, want = (read_json(tmp_path / r / "stages" / f"{stage}.json")["info"]
                     for r in ("k", "whole"))
        assert timeless(got["history"]) == timeless(want["history"]), stage
    assert len(read_json(tmp_path / "k" / "stages" / "it1.actor.json")["info"]["history"]) >= 4
    for load, sub in ((load_policy, "actor"), (ValueModel.load, "critic")):
        same_state(load(tmp_path / "whole" / "it1" / sub)[0], load(tmp_path / "k" / "it1" / sub)[0])
