"""Every rank does its share (2 CPU ranks under torchrun, gloo, the torch engine):

- DAPO: both ranks generate (rollouts, MC labels, evals), the merged artifacts are byte for
  byte one process's, the critic and actor train data parallel and end with the same weights;
  its canaries are one process's, logged once;
- a run killed in the MC stage resumes per shard: finished chunks are not generated again;
- GRPO and PPO sample on both ranks and take the same first update as one process, GRPO also
  with canaries and --report-to tensorboard (rank 0 writes the one event file);
- `dapo-bench eval` of a 6-problem task gives each rank 3 and the samples of one process;
- a training stage (SFT, GRPO) killed on both ranks resumes from its --checkpoint-every
  checkpoint.
"""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from _launch import free_port, rank_env, run_ranks
from _park import Parked

from dapo_bench.io import read_json, read_jsonl
from dapo_bench.models import load_policy

pytestmark = pytest.mark.integration  # launches processes, trains or kills runs (conftest)

DAPO_SETS = ["n_problems=12", "n_samples=2", "n_rollouts=2", "mc_samples=4",
             "max_new_tokens=12", "gen_chunk=4", "critic.epochs=1", "actor.epochs=1",
             "advantage=critic", "min_spread=0"]
EVAL = ["--eval-limit", "6", "--eval-max-new-tokens", "6", "--no-control", "--quiet"]


def _cmd(method: str, model_dir: str, out: Path, run_id: str, sets: list[str],
         ranks: int = 2) -> list[str]:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
           str(ranks), "-m", "dapo_bench.cli", "train", "--method", method, "--model",
           model_dir, "--out", str(out), "--run-id", run_id, "--threads", "1", *EVAL]
    for s in sets:
        cmd += ["--set", s]
    return cmd


def _env() -> dict:
    return rank_env()


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    run = run_ranks(cmd, _env(), timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    return run


def _same_weights(a: Path, b: Path, atol: float = 1e-5) -> None:
    got, _ = load_policy(a)
    want, _ = load_policy(b)
    for name, value in want.state_dict().items():
        assert torch.allclose(got.state_dict()[name], value, atol=atol), name


def _untimed(path: Path) -> list[dict]:
    rows = read_jsonl(path)
    for r in rows:
        assert r.pop("seconds") >= 0
    return rows


def test_dapo_two_ranks_share_the_work_and_match_one_process(model_dir, tmp_path):
    """With canaries too: every rank samples them, rank 0 alone logs them, once."""
    _run(_cmd("dapo", model_dir, tmp_path, "two", DAPO_SETS) + ["--canaries", "0.25"])
    dapo_matches_one_process(model_dir, tmp_path, canaries=0.25)
    rows = read_jsonl(tmp_path / "two" / "canaries.jsonl")
    assert len(rows) == 3 and rows == read_jsonl(tmp_path / "one" / "canaries.jsonl")
    two = read_json(tmp_path / "two" / "results.json")["canaries"]
    assert two == read_json(tmp_path / "one" / "results.json")["canaries"]
    assert two["n"] == 3 * 2 and two["rewarded"] == 0  # ceil(0.25 * 12) canaries, 2 samples


def dapo_matches_one_process(model_dir: str, tmp_path: Path, **opts) -> None:
    """Run ``tmp_path/two`` (DAPO_SETS on 2 ranks) holds one process's artifacts and results;
    ``opts``: the run's other options (RunOptions fields)."""
    from dapo_bench.run import RunOptions, run_training
    from dapo_bench.training.value import ValueModel

    one = run_training("dapo", RunOptions(
        model=model_dir, eval_limit=6, eval_max_new_tokens=6, control=False, out=str(tmp_path),
        run_id="one", quiet=True, **opts), overrides=DAPO_SETS)
    two, ref = tmp_path / "two", tmp_path / "one"
    for f in ("it1/rollouts.jsonl", "it1/states.jsonl", "it1/mc.jsonl", "it1/advantages.jsonl"):
        assert (two / f).read_bytes() == (ref / f).read_bytes(), f
    for f in ("eval/final/samples.jsonl", "eval/reference/samples.jsonl"):
        # an eval row carries its share of the wall time (``seconds``), the one field that differs
        assert _untimed(two / f) == _untimed(ref / f), f
    assert not list(two.rglob("*.rank*.jsonl"))  # shards merged and removed
    res = read_json(two / "results.json")
    assert res["ledger"] == one["ledger"]  # each rank charged its share, summed
    for stage in ("it1.rollouts", "it1.mc"):
        chunks = read_json(two / "stages" / f"{stage}.json")["info"]["chunks"]
        assert len(chunks["generated_by_rank"]) == 2 and min(chunks["generated_by_rank"]) > 0
    _same_weights(two / "it1" / "actor", ref / "it1" / "actor")
    got_v, _ = ValueModel.load(two / "it1" / "critic")
    want_v, _ = ValueModel.load(ref / "it1" / "critic")
    for name, value in want_v.state_dict().items():
        assert torch.allclose(got_v.state_dict()[name], value, atol=1e-5), name
    assert res["tasks"]["arith"]["metrics"] == one["tasks"]["arith"]["metrics"]


def _kill_ranks_when(cmd: list[str], parks: dict[int, tuple[str, int]], why: str) -> None:
    """Start the two ranks of torchrun ``cmd`` as plain processes (what torchrun starts) and
    SIGKILL both, mid-stage, once each rank ``r`` of ``parks`` has written its ``rows``-th row
    to the file ``parks[r] = (file_name, rows)`` names (it parks there: no race against a fast
    machine). A rank not in ``parks`` runs on until it waits on a parked one."""
    argv = cmd[cmd.index("-m", 3):]
    port = str(free_port())
    logs = [Path(cmd[cmd.index("--out") + 1]) / f"killed.rank{r}.log" for r in range(2)]
    procs = []
    for r, log in enumerate(logs):
        env = {**_env(), "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2",
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        file_name, rows = parks.get(r, ("", 0))  # rows 0: never parks
        with open(log, "wb") as err:
            procs.append(Parked(argv, file_name, rows, env=env, stdout=subprocess.DEVNULL,
                                stderr=err))
    try:
        parked = all(procs[r].wait_parked() for r in parks)
    finally:
        for p in procs:
            p.close()
    assert parked, why + "".join(f"\n--- rank {r}:\n{log.read_text()[-3000:]}"
                                 for r, log in enumerate(logs))


def test_a_killed_rank_resumes_its_shard_without_redoing_finished_chunks(model_dir, tmp_path):
    sets = [s if not s.startswith("gen_chunk") else "gen_chunk=1" for s in DAPO_SETS]
    run = tmp_path / "k"
    marker = run / "stages" / "it1.mc.json"
    # each rank makes its own chunk first (dist.WorkQueue: chunk r on rank r), then whichever
    # is free, so only a first row per rank is certain: both park there, the stage half done
    _kill_ranks_when(_cmd("dapo", model_dir, tmp_path, "k", sets),
                     {r: (f"mc.rank{r}.jsonl", 1) for r in range(2)},
                     "a rank ended before its first MC row")
    assert not marker.exists(), "the MC stage had finished before the kill"
    assert [len(read_jsonl(run / "it1" / f"mc.rank{r}.jsonl")) for r in range(2)] == [1, 1]
    out = _run(_cmd("dapo", model_dir, tmp_path, "k", sets))
    assert "stage it1.rollouts: done before, skipped" in out.stderr
    chunks = read_json(marker)["info"]["chunks"]
    assert chunks["resumed"] == 2  # the finished chunk of each shard was read back
    assert chunks["resumed"] + sum(chunks["generated_by_rank"]) == chunks["chunks"]
    rows = read_jsonl(run / "it1" / "mc.jsonl")
    assert len(rows) == len({r["key"] for r in rows}) == chunks["chunks"]
    # and the resumed run's labels are an uninterrupted one's
    from dapo_bench.run import RunOptions, run_training

    run_training("dapo", RunOptions(model=model_dir, eval_limit=6, eval_max_new_tokens=6,
                                    control=False, out=str(tmp_path), run_id="w", quiet=True),
                 overrides=sets)
    assert (run / "it1" / "mc.jsonl").read_bytes() == (tmp_path / "w" / "it1" / "mc.jsonl"
                                                        ).read_bytes()


GRPO_ONE_STEP = ["prompts_per_step=4", "samples_per_prompt=4", "max_new_tokens=8",
                 "minibatch_size=64", "max_steps=1", "optim.lr=1e-3"]


@pytest.mark.parametrize("method,sets", [
    ("grpo", GRPO_ONE_STEP),
    ("ppo", ["rollout_batch=8", "max_new_tokens=8", "minibatch_size=64", "max_steps=1",
             "optim.lr=1e-3", "critic_lr=1e-3"]),
])
def test_online_methods_on_two_ranks_take_one_process_first_update(model_dir, tmp_path, method,
                                                                   sets):
    _run(_cmd(method, model_dir, tmp_path, "two", sets))
    online_matches_one_process(method, model_dir, tmp_path, sets)


def online_matches_one_process(method: str, model_dir: str, tmp_path: Path, sets: list[str],
                               **opts) -> dict:
    """Run ``tmp_path/two`` (``method`` on 2 ranks) took one process's first update; ``opts``:
    the run's other options (RunOptions fields). Returns both results."""
    from dapo_bench.run import RunOptions, run_training

    one = run_training(method, RunOptions(
        model=model_dir, eval_limit=6, eval_max_new_tokens=6, control=False, out=str(tmp_path),
        run_id="one", quiet=True, **opts), overrides=sets)
    res = read_json(tmp_path / "two" / "results.json")
    assert res["ledger"] == one["ledger"]
    h2, h1 = res["history"][0], one["history"][0]
    assert h2["rows"] == h1["rows"] and h2["reward"] == pytest.approx(h1["reward"])
    _same_weights(tmp_path / "two" / "policy", tmp_path / "one" / "policy")
    return {"two": res, "one": one}


def test_grpo_with_canaries_and_tensorboard_on_two_ranks(model_dir, tmp_path):
    """Canaries and --report-to on 2 ranks: the first update and the canaries block are one
    process's; rank 0 alone writes the event file, and its reward is one process's."""
    from test_telemetry import _scalars

    _run(_cmd("grpo", model_dir, tmp_path, "two", GRPO_ONE_STEP)
         + ["--canaries", "0.5", "--report-to", "tensorboard"])
    res = online_matches_one_process("grpo", model_dir, tmp_path, GRPO_ONE_STEP, canaries=0.5,
                                     report_to="tensorboard")
    two, one = res["two"]["canaries"], res["one"]["canaries"]
    assert two["n"] == one["n"] > 0 and two["rewarded"] == one["rewarded"]
    assert len(list((tmp_path / "two" / "tensorboard").glob("events.*"))) == 1
    tags = {run: _scalars(tmp_path / run) for run in ("two", "one")}
    assert set(tags["two"]) == set(tags["one"])
    assert [v for _, v in tags["two"]["train/reward_mean"]] == pytest.approx(
        [v for _, v in tags["one"]["train/reward_mean"]])


def test_eval_on_two_ranks_gives_each_rank_half_of_a_small_task(model_dir, tmp_path):
    # 6 problems and the default chunk of 64: one chunk left rank 1 idle before chunks were cut
    # evenly over the ranks; the merged samples are one process's
    from dapo_bench.eval import evaluate

    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "dapo_bench.cli", "eval", "--tasks", "arith", "--limit", "6", "--model",
           model_dir, "--max-new-tokens", "6", "--threads", "1", "--quiet", "--out",
           str(tmp_path), "--run-id", "two"]
    run = _run(cmd)
    for r in (0, 1):  # two chunks of 3: each rank starts on its own, and none is left
        assert f"arith (rank {r}/2): done (made 3 of the 6 new problems)" in run.stderr, \
            run.stderr[-2000:]
    assert run.stderr.count("(the same command resumes it)") == 1  # rank 0 speaks for the run
    assert run.stdout.count("arith") == 1  # one summary table
    again = _run(cmd)  # resumed: rank 0 reports what the log already holds
    assert "arith (rank 0/2): 6/6 problems already done, resuming" in again.stderr
    evaluate(model_dir, ["arith"], run_dir=tmp_path / "one", limit=6, max_new_tokens=6)
    two, one = (_untimed(tmp_path / d / "samples.jsonl") for d in ("two", "one"))
    assert two == one


def _kill_after_a_save_and_resume(method: str, model_dir: str, tmp_path: Path,
                                  sets: list[str]) -> None:
    """Run ``method`` on 2 ranks as run ``k`` with --checkpoint-every 2, SIGKILL both ranks once
    its train stage saved, rerun it to the end and check that it resumed from the save."""
    cmd = [*_cmd(method, model_dir, tmp_path, "k", sets), "--checkpoint-every", "2"]
    ckpt, marker = tmp_path / "k" / "stages" / "train.ckpt", tmp_path / "k" / "stages" / "train.json"
    _kill_ranks_when(cmd, {0: (f"{ckpt.name}/latest.json", 1)}, "a rank ended before a save")
    assert not marker.exists(), "the stage had finished before the kill"
    out = _run(cmd)
    assert "train.ckpt: resuming the stage at step" in out.stderr, out.stderr[-2000:]
    assert not ckpt.exists()


def test_a_stage_killed_on_two_ranks_resumes_from_its_checkpoint(model_dir, tmp_path):
    """--checkpoint-every on the torch engine's data parallel ranks: SFT killed (SIGKILL, both
    ranks) after a checkpoint, rerun under torchrun, ends with one process's policy."""
    from dapo_bench.run import RunOptions, run_training

    sets = ["max_steps=24", "batch_size=8", "log_every=1", "optim.lr=1e-3"]
    _kill_after_a_save_and_resume("sft", model_dir, tmp_path, sets)
    one = run_training("sft", RunOptions(model=model_dir, eval_limit=6, eval_max_new_tokens=6,
                                         control=False, out=str(tmp_path), run_id="one",
                                         quiet=True), overrides=sets)
    res = read_json(tmp_path / "k" / "results.json")
    assert res["ledger"] == one["ledger"] and len(res["history"]) == 24
    _same_weights(tmp_path / "k" / "policy", tmp_path / "one" / "policy")


def test_an_online_stage_killed_on_two_ranks_resumes_from_its_checkpoint(model_dir, tmp_path):
    """GRPO on 2 ranks, both SIGKILLed after a save and rerun, ends as an uninterrupted 2-rank
    run: the same history, ledger and policy."""
    sets = ["prompts_per_step=4", "samples_per_prompt=2", "max_new_tokens=8", "minibatch_size=4",
            "max_steps=6", "optim.lr=1e-3"]
    _kill_after_a_save_and_resume("grpo", model_dir, tmp_path, sets)
    _run(_cmd("grpo", model_dir, tmp_path, "w", sets))
    res, whole = (read_json(tmp_path / r / "results.json") for r in ("k", "w"))
    assert res["ledger"] == whole["ledger"] and len(res["history"]) == 6
    assert [{k: v for k, v in h.items() if k != "seconds"} for h in res["history"]] == \
        [{k: v for k, v in h.items() if k != "seconds"} for h in whole["history"]]
    _same_weights(tmp_path / "k" / "policy", tmp_path / "w" / "policy", atol=0)
