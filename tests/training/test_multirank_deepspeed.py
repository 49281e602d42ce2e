"""Multi-rank training for real (DeepSpeed CPU accelerator, gloo).

- ZeRO-3 partitions the DAPO critic's value head too: ``ValueModel.save`` must gather it.
- ``dapo-bench train --method sft --deepspeed zero2`` under ``torchrun --nproc_per_node 2``:
  rank 0 alone evaluates and writes (one results.json, no duplicated JSONL rows), both ranks
  train on halves of each batch, and the saved policy equals the one-process run's.
- ``--method dapo --deepspeed zero3`` likewise: same artifacts, ledger, critic and actor as one
  process (the critic and actor stages run on both ranks, everything else on rank 0).
"""

import subprocess
import sys
from pathlib import Path

import pytest
from _launch import rank_env, run_ranks

pytest.importorskip(
    "deepspeed", reason="deepspeed not installed (pip install 'dapo-bench[deepspeed]')"
)

import torch

from dapo_bench.io import read_json
from dapo_bench.methods.dapo.rows import CriticExample
from dapo_bench.models import load_policy
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training.engine import EngineConfig, OptimConfig

pytestmark = [pytest.mark.integration, pytest.mark.deepspeed]

TEXTS = [("12+3=", 0.8), ("7*8=5", 0.1), ("40-9=3", 0.6), ("5+5=1", 0.9)]
_TOK = build_char_tokenizer()
DATA = [CriticExample(tuple(_TOK(t, add_special_tokens=False)["input_ids"]), y, t, True)
        for t, y in TEXTS]


def _critic(stage: str):
    from dapo_bench.methods.dapo.critic import CriticConfig, train_critic
    from dapo_bench.training.value import ValueModel

    tok = build_char_tokenizer()
    vm = ValueModel.from_causal_lm(tiny_llama(tok, seed=0, d=32, layers=2, heads=2, ffn=64))
    cfg = CriticConfig(optim=OptimConfig(lr=1e-2), epochs=2.0, batch_size=2)
    train_critic(vm, tok.pad_token_id, DATA, cfg, engine_cfg=EngineConfig(stage))
    return vm, tok


def test_zero3_critic_save_gathers_backbone_and_head(tmp_path, monkeypatch):
    from dapo_bench.methods.dapo.critic import score_values
    from dapo_bench.training.value import ValueModel

    # small parameters (the head) stay whole unless the persistence threshold is 0
    over = tmp_path / "ds.json"
    over.write_text('{"zero_optimization": {"stage3_param_persistence_threshold": 0}}')
    monkeypatch.setenv("DAPO_BENCH_DS_CONFIG", str(over))
    want, tok = _critic("none")
    vm, tok = _critic("zero3")
    assert vm.head.weight.numel() == 0  # partitioned: a bare state_dict() would save nothing
    vm.save(tok, tmp_path / "critic")
    got, _ = ValueModel.load(tmp_path / "critic")
    assert float(want.head.weight.detach().abs().sum()) > 0  # the head moved off its zero init
    for name, value in want.state_dict().items():
        assert torch.allclose(got.state_dict()[name], value, atol=1e-5), name
    texts = [x.ids for x in DATA]
    pad = tok.pad_token_id
    assert score_values(got, pad, texts) == pytest.approx(score_values(want, pad, texts),
                                                          abs=1e-5)


SETS = ["max_steps=3", "batch_size=8", "log_every=1", "optim.lr=1e-3"]
FLAGS = ["--eval-limit", "3", "--eval-max-new-tokens", "6", "--control", "--quiet"]


def _torchrun(method: str, stage: str, model_dir: str, out: Path, flags: list[str],
              sets: list[str]) -> subprocess.CompletedProcess:
    env = rank_env(DS_ACCELERATOR="cpu")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
           "2", "-m", "dapo_bench.cli", "train", "--method", method, "--model", model_dir,
           "--deepspeed", stage, "--out", str(out), "--run-id", "two", *flags]
    for s in sets:
        cmd += ["--set", s]
    run = run_ranks(cmd, env, timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    return run


def test_sft_under_torchrun_two_ranks_matches_one_process(model_dir, tmp_path):
    from dapo_bench.run import RunOptions, run_training

    run = _torchrun("sft", "zero2", model_dir, tmp_path, FLAGS, SETS)
    two = tmp_path / "two"
    assert [p.relative_to(two) for p in two.rglob("results.json") if p.parent == two] == \
        [Path("results.json")]
    jsonl = sorted(two.rglob("*.jsonl"))
    assert len(jsonl) >= 3  # eval samples of reference, final and control
    for path in jsonl:  # rank 0 alone wrote every artifact
        lines = path.read_text().splitlines()
        assert lines and len(lines) == len(set(lines)), path
    assert run.stderr.count("stage train: start") == 1  # only rank 0 logs

    one = run_training("sft", RunOptions(
        model=model_dir, eval_limit=3, eval_max_new_tokens=6, control=True, out=str(tmp_path),
        run_id="one", quiet=True), overrides=SETS)
    res = read_json(two / "results.json")
    assert res["ledger"] == one["ledger"]  # token counts summed over the ranks' halves
    assert res["history"][-1]["step"] == 3
    assert [h["loss"] for h in res["history"]] == pytest.approx(
        [h["loss"] for h in one["history"]], rel=1e-4)
    got, _ = load_policy(two / "policy")
    want, _ = load_policy(tmp_path / "one" / "policy")
    for name, value in want.state_dict().items():
        assert torch.allclose(got.state_dict()[name], value, atol=1e-5), name


DAPO_SETS = ["n_problems=12", "n_samples=2", "n_rollouts=2", "mc_samples=4",
             "max_new_tokens=12", "gen_chunk=4", "critic.epochs=1", "actor.epochs=1"]


def test_dapo_zero3_under_torchrun_two_ranks_matches_one_process(model_dir, tmp_path):
    """Rank 0 samples; critic and actor train on both ranks (ZeRO-3 partitions them) and the
    saved critic and actor equal the one-process torch-engine run's."""
    from dapo_bench.run import RunOptions, run_training
    from dapo_bench.training.value import ValueModel

    flags = ["--preset", "toy", "--eval-limit", "3", "--eval-max-new-tokens", "6",
             "--no-control", "--quiet"]
    _torchrun("dapo", "zero3", model_dir, tmp_path, flags, DAPO_SETS)
    one = run_training("dapo", RunOptions(
        model=model_dir, eval_limit=3, eval_max_new_tokens=6, control=False, out=str(tmp_path),
        run_id="one", quiet=True), preset="toy", overrides=DAPO_SETS)
    two = tmp_path / "two"
    assert read_json(two / "results.json")["ledger"] == one["ledger"]
    for f in ("rollouts.jsonl", "mc.jsonl", "advantages.jsonl"):
        assert (two / "it1" / f).read_text() == (tmp_path / "one" / "it1" / f).read_text(), f
    got, _ = load_policy(two / "it1" / "actor")
    want, _ = load_policy(tmp_path / "one" / "it1" / "actor")
    for name, value in want.state_dict().items():
        assert torch.allclose(got.state_dict()[name], value, atol=1e-6), name
    got_v, _ = ValueModel.load(two / "it1" / "critic")
    want_v, _ = ValueModel.load(tmp_path / "one" / "it1" / "critic")
    for name, value in want_v.state_dict().items():
        assert torch.allclose(got_v.state_dict()[name], value, atol=1e-6), name
