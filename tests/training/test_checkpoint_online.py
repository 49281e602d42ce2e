"""Checkpoints inside an online (GRPO, PPO) training stage: a run killed after a save and rerun
resumes after its last saved online step and ends exactly where an uninterrupted run ends
(weights, history, ledger), sampling only the steps it lacks; with a generator that holds its
own copy of the weights (vLLM's way), the resumed generator samples from the loaded weights;
PPO on a ZeRO-2 DeepSpeed engine (DeepSpeed's own checkpoint of actor and critic) resumes too."""

from pathlib import Path

import pytest
import torch
from _resume import kill_and_resume, same_state, timeless

from dapo_bench.generation.hf import HFGenerator
from dapo_bench.ledger import Ledger
from dapo_bench.methods.grpo import GRPOConfig, train_grpo
from dapo_bench.methods.ppo import PPOConfig, train_ppo
from dapo_bench.models import count_params, save_policy
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training import checkpoint
from dapo_bench.training.engine import ONE_PROCESS, EngineConfig, OptimConfig
from dapo_bench.training.online import OnlinePolicy
from dapo_bench.training.rollouts import TrainProblem
from dapo_bench.training.scope import Scope

pytestmark = pytest.mark.integration  # launches processes, trains or kills runs (conftest)

torch.set_num_threads(1)
PROBLEMS = [TrainProblem(f"p{i}", f"{i}+{i}\n", str(2 * i)) for i in range(8)]


class Killed(Exception):
    pass


class OwnCopy:
    """An HF generator seen as one that keeps its own weights (no ``model``): the online loop
    trains a separate copy and must sync it before sampling, as with vLLM."""

    model = None

    def __init__(self, model_dir: str):
        self._gen = HFGenerator(model_dir, batch_size=256)

    def __getattr__(self, name):
        return getattr(self._gen, name)


def digit_fraction(texts, ids, finished):
    return [sum(c.isdigit() for c in t) / max(len(t), 1) for t in texts]


def _model_dir(tmp_path: Path) -> Path:
    d = tmp_path / "m"
    if not d.is_dir():
        tok = build_char_tokenizer()
        save_policy(tiny_llama(tok, seed=0, d=32, layers=2, heads=2, ffn=64), tok, d)
    return d


def _run(train, cfg, tmp_path, ckpt: str | None, *, kill_at=None, own_copy=False,
         engine_cfg=ONE_PROCESS):
    m = str(_model_dir(tmp_path))
    gen = OwnCopy(m) if own_copy else HFGenerator(m, batch_size=256)
    policy = OnlinePolicy(gen, m, tmp_path / f"sync-{ckpt}")
    ledger = Ledger(n_params=count_params(policy.model))
    logged = []

    def on_log(row):
        logged.append(row["step"])
        if row["step"] == kill_at:
            raise Killed

    torch.manual_seed(123)
    with checkpoint.stage_scope(tmp_path / str(ckpt), 2 if ckpt else 0):
        hist = train(policy, PROBLEMS, cfg, scope=Scope("train", ledger), score=digit_fraction,
                     seed=5,
                     engine_cfg=engine_cfg, on_log=on_log)
    return policy.model, hist, ledger, logged


def _same_run(a, b):
    (ma, ha, la, _), (mb, hb, lb, _) = a, b
    assert timeless(ha) == timeless(hb)
    assert la.stages["train"] == lb.stages["train"]  # every token charged once
    same_state(ma, mb)


GRPO = GRPOConfig(prompts_per_step=4, samples_per_prompt=4, max_new_tokens=6, minibatch_size=8,
                  max_steps=5, ppo_epochs=2, optim=OptimConfig(lr=3e-3))
PPO = PPOConfig(rollout_batch=8, max_new_tokens=6, minibatch_size=4, max_steps=5, ppo_epochs=2,
                critic_lr=3e-3, optim=OptimConfig(lr=3e-3))


@pytest.mark.parametrize("train,cfg,own_copy", [(train_grpo, GRPO, False),
                                                (train_ppo, PPO, False),
                                                (train_grpo, GRPO, True)],
                         ids=["grpo", "ppo-actor-and-critic", "grpo-generator-own-copy"])
def test_an_online_stage_killed_after_a_save_resumes_there(tmp_path, train, cfg, own_copy):
    whole = _run(train, cfg, tmp_path, None, own_copy=own_copy)
    with pytest.raises(Killed):
        _run(train, cfg, tmp_path, "k", kill_at=3, own_copy=own_copy)  # saved at step 2
    assert sorted(p.name for p in (tmp_path / "k").iterdir()) == ["latest.json", "step2"]
    resumed = _run(train, cfg, tmp_path, "k", own_copy=own_copy)
    assert resumed[3] == [3, 4, 5]  # only the steps after the save ran
    assert len(whole[1]) == 5
    _same_run(whole, resumed)


@pytest.mark.deepspeed
def test_ppo_on_zero2_killed_after_a_save_resumes_there(tmp_path):
    pytest.importorskip("deepspeed", reason="deepspeed not installed")
    zero2 = EngineConfig("zero2")
    whole = _run(train_ppo, PPO, tmp_path, None, engine_cfg=zero2)
    with pytest.raises(Killed):
        _run(train_ppo, PPO, tmp_path, "k", kill_at=3, engine_cfg=zero2)
    resumed = _run(train_ppo, PPO, tmp_path, "k", engine_cfg=zero2)
    assert resumed[3] == [3, 4, 5]
    (ma, ha, la, _), (mb, hb, lb, _) = whole, resumed
    assert la.stages["train"] == lb.stages["train"]
    assert [h["reward"] for h in hb] == pytest.approx([h["reward"] for h in ha], rel=1e-5)
    for (name, x), y in zip(ma.state_dict().items(), mb.state_dict().values()):
        assert torch.allclose(x, y, atol=1e-6), name


def test_a_checkpoint_of_other_online_settings_is_ignored(tmp_path, capsys):
    with pytest.raises(Killed):
        _run(train_grpo, GRPO, tmp_path, "k", kill_at=3)
    other = GRPOConfig(**{**GRPO.__dict__, "prompts_per_step": 2})
    fresh = _run(train_grpo, other, tmp_path, None)
    again = _run(train_grpo, other, tmp_path, "k")
    assert "a checkpoint of another training loop" in capsys.readouterr().err
    assert again[3] == [1, 2, 3, 4, 5]
    _same_run(fresh, again)


def test_a_grpo_run_killed_mid_stage_resumes_to_the_same_policy(tmp_path, monkeypatch, capsys):
    from dapo_bench.models import load_policy
    from dapo_bench.training import online

    kw = {"task": "arith", "eval_tasks": ("arith",), "eval_limit": 2}
    sets = ["max_steps=4", "prompts_per_step=4", "samples_per_prompt=2", "max_new_tokens=8",
            "minibatch_size=8"]
    whole, again = kill_and_resume(monkeypatch, tmp_path, "grpo", kw, sets,
                                   [(online, "sample_step", "train")], preset="toy")
    assert timeless(again["history"]) == timeless(whole["history"]) and len(whole["history"]) == 4
    # the resumed run's bar counts the 2 restored steps as done, not as made
    assert "grpo steps: done (4/4 steps, 2 new)" in capsys.readouterr().err
    same_state(load_policy(str(tmp_path / "whole" / "policy"))[0],
               load_policy(str(tmp_path / "k" / "policy"))[0])


def test_a_grpo_run_with_canaries_killed_mid_stage_resumes_to_the_same_run(tmp_path,
                                                                            monkeypatch):
    """The canaries of the steps a resumed run redoes replace theirs: the canaries block and
    canaries.jsonl are the uninterrupted run's."""
    import json

    from dapo_bench.training import online

    kw = {"task": "arith", "eval_tasks": ("arith",), "eval_limit": 2, "canaries": 0.25}
    sets = ["max_steps=4", "prompts_per_step=4", "samples_per_prompt=2", "max_new_tokens=8",
            "minibatch_size=8"]
    whole, again = kill_and_resume(monkeypatch, tmp_path, "grpo", kw, sets,
                                   [(online, "sample_step", "train")], preset="toy")
    assert timeless(again["history"]) == timeless(whole["history"])
    assert whole["canaries"]["n"] > 0 and again["canaries"] == whole["canaries"]

    def rows(run: str) -> list[dict]:
        lines = (tmp_path / run / "canaries.jsonl").read_text().splitlines()
        return sorted((json.loads(x) for x in lines), key=lambda r: json.dumps(r, sort_keys=True))

    assert rows("k") == rows("whole")
