"""One run over two "nodes" on this machine: two ``torchrun`` launches (``--nnodes 2``, one rank
each) joined by c10d rendezvous on loopback, as on a cluster:

- a toy DAPO run, a GRPO run and an eval give one process's artifacts and results;
- nodes that see different folders at the run directory's path stop at start, with one line,
  before any work;
- a node's rank SIGKILLed during a training stage: the other node stops at once with one line
  (a node was lost, the command that resumes; under ``python -m dapo_bench.launch`` nothing
  else), and rerunning the same two launch commands resumes from the stage's checkpoint to an
  uninterrupted run's results.

What is shared between nodes and what is not: docs/scale-out.md, "Several nodes".
"""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from _launch import finish, rank_env, run_nodes, start, torchrun_nodes
from _park import BOOT_SCRIPT, ParkedByFifo
from test_scaleout import (
    DAPO_SETS,
    _cmd,
    _same_weights,
    _untimed,
    dapo_matches_one_process,
    online_matches_one_process,
)

from dapo_bench.io import read_json

pytestmark = pytest.mark.integration  # launches processes, trains or kills runs (conftest)

GRPO_SETS = ["prompts_per_step=4", "samples_per_prompt=2", "max_new_tokens=8",
             "minibatch_size=4", "max_steps=6", "optim.lr=1e-3"]


def _args(method: str, model_dir: str, out: Path, run_id: str, sets: list[str]) -> list[str]:
    """``-m dapo_bench.cli train ...``: what each node's torchrun starts."""
    cmd = _cmd(method, model_dir, out, run_id, sets)
    return cmd[cmd.index("-m", 3):]


def _ok(runs) -> str:
    for r in runs:
        assert r.returncode == 0, r.stderr[-4000:]
    return "".join(r.stderr for r in runs)


def test_dapo_on_two_nodes_matches_one_process(model_dir, tmp_path):
    _ok(run_nodes(torchrun_nodes(_args("dapo", model_dir, tmp_path, "two", DAPO_SETS)),
                  rank_env(), timeout=600))
    dapo_matches_one_process(model_dir, tmp_path)


def test_grpo_on_two_nodes_takes_one_process_first_update(model_dir, tmp_path):
    sets = [*GRPO_SETS[:-2], "max_steps=1", "optim.lr=1e-3"]
    _ok(run_nodes(torchrun_nodes(_args("grpo", model_dir, tmp_path, "two", sets)), rank_env(),
                  timeout=600))
    online_matches_one_process("grpo", model_dir, tmp_path, sets)


def _eval_args(model_dir: str, out: Path) -> list[str]:
    return ["-m", "dapo_bench.cli", "eval", "--tasks", "arith", "--limit", "6", "--model",
            model_dir, "--max-new-tokens", "6", "--threads", "1", "--quiet", "--out", str(out),
            "--run-id", "two"]


def test_eval_on_two_nodes_gives_one_process_samples(model_dir, tmp_path):
    from dapo_bench.eval import evaluate

    err = _ok(run_nodes(torchrun_nodes(_eval_args(model_dir, tmp_path)), rank_env(),
                        timeout=600))
    for r in (0, 1):
        assert f"arith (rank {r}/2): done (made 3 of the 6 new problems)" in err, err[-2000:]
    evaluate(model_dir, ["arith"], run_dir=tmp_path / "one", limit=6, max_new_tokens=6)
    assert _untimed(tmp_path / "two" / "samples.jsonl") == _untimed(
        tmp_path / "one" / "samples.jsonl")


def test_nodes_that_see_different_run_folders_stop_at_start(model_dir, tmp_path):
    # the same path on both nodes names two folders (each node mounts its own disk there): here
    # each node is given its own --out, which is what a node without the shared mount sees
    cmds = torchrun_nodes(_eval_args(model_dir, tmp_path / "node0"))
    cmds[1][cmds[1].index("--out") + 1] = str(tmp_path / "node1")
    t0 = time.monotonic()
    runs = run_nodes(cmds, rank_env(), timeout=300)
    for r in runs:
        assert r.returncode != 0
        lines = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
        assert len(lines) == 1, r.stderr[-3000:]
        assert "not the same folder on every node" in lines[0], lines
        assert "read nothing (No such file or directory)" in lines[0], lines
        assert "every node must mount the shared run directory (--out)" in lines[0]
    assert time.monotonic() - t0 < 120
    for i in (0, 1):  # nothing was generated: no samples on either side
        assert not list((tmp_path / f"node{i}").rglob("samples*.jsonl"))


def _worker_of(launcher_pid: int) -> int:
    """The rank torchrun started (its one child)."""
    children = Path(f"/proc/{launcher_pid}/task/{launcher_pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def test_a_lost_node_stops_the_other_with_one_line_and_a_rerun_resumes(model_dir, tmp_path):
    """GRPO over two nodes (``python -m dapo_bench.launch``, torchrun with one-line failures)
    with --checkpoint-every 2: node 1's rank SIGKILLed after a save; node 0 stops at once; each
    node prints one line, no traceback: a node was lost (node 0), the rank was killed (node 1),
    and the command that resumes; the same two launch commands resume the stage from its
    checkpoint to an uninterrupted run's results."""
    args = [*_args("grpo", model_dir, tmp_path, "k", GRPO_SETS), "--checkpoint-every", "2"]
    cmds, env = torchrun_nodes(args, launcher="dapo_bench.launch"), rank_env()
    ckpt = tmp_path / "k" / "stages" / "train.ckpt"
    # The rank that saves parks right after its first save (no race against a fast machine):
    # node 1's rank is SIGKILLed while the stage cannot have finished, then the parked rank
    # (if it is node 0's) is let go into its next collective.
    park = ParkedByFifo(str(tmp_path), f"{ckpt.name}/latest.json", 1)
    parked = [[*c[:c.index("-m", 3)], BOOT_SCRIPT, *args] for c in cmds]
    procs = [start(c, {**env, **park.env}, stdin=subprocess.PIPE) for c in parked]
    assert park.wait_parked(), "no rank saved a checkpoint"
    killed_at = time.monotonic()
    os.kill(_worker_of(procs[1].pid), signal.SIGKILL)
    procs[0].stdin.write("go")  # node 0's rank, parked or blocked in a collective, goes on
    procs[0].stdin.flush()
    nodes = finish(procs, timeout=120)  # never hangs: both launchers end
    assert time.monotonic() - killed_at < 60
    assert not (tmp_path / "k" / "stages" / "train.json").exists(), "the stage had finished"
    for node, what in zip(nodes, ("a node was lost", "was killed by SIGKILL; the other nodes stop")):
        assert node.returncode != 0
        lines = [ln for ln in node.stderr.splitlines() if ln.startswith("error:")]
        assert len(lines) == 1 and "Traceback" not in node.stderr, node.stderr[-3000:]
        assert what in lines[0] and "rerun the same launch command on every node" in lines[0]
        assert "-m dapo_bench.launch --nnodes 2" in lines[0]  # the command that resumes
        assert "--checkpoint-every 2" in lines[0], lines

    err = _ok(run_nodes(cmds, env, timeout=600))  # the same two launch commands
    assert "train.ckpt: resuming the stage at step" in err, err[-2000:]
    assert not ckpt.exists()
    _ok(run_nodes(torchrun_nodes(_args("grpo", model_dir, tmp_path, "w", GRPO_SETS),
                                 launcher="dapo_bench.launch"), env, timeout=600))
    res, whole = (read_json(tmp_path / r / "results.json") for r in ("k", "w"))
    assert res["ledger"] == whole["ledger"] and len(res["history"]) == 6
    assert [{k: v for k, v in h.items() if k != "seconds"} for h in res["history"]] == \
        [{k: v for k, v in h.items() if k != "seconds"} for h in whole["history"]]
    _same_weights(tmp_path / "k" / "policy", tmp_path / "w" / "policy", atol=0)


def test_only_a_lost_peer_is_reported_as_a_lost_node(monkeypatch):
    from dapo_bench import dist, nodes

    monkeypatch.setattr(dist, "_initialised", lambda: False)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    gloo = RuntimeError("[/x/gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:35470: "
                        "Connection reset by peer. This is typically caused by a crash")
    line = nodes.lost_rank_message(gloo, ["train", "--method", "grpo"])
    assert line.startswith("error: rank 1/2 on ") and "\n" not in line
    assert "a node was lost: a collective lost contact with another rank (Read error " \
        "[127.0.0.1]:35470: Connection reset by peer)" in line
    assert line.endswith("-m dapo_bench.cli train --method grpo")  # not under torchrun here
    detail = RuntimeError("ProcessGroupWrapper: Monitored Barrier encountered error running "
                          "collective: CollectiveFingerPrint(OpType=ALLREDUCE). Error: \n[/x/gloo/"
                          "pair.cc:553] Connection closed by peer [127.0.0.1]:391. This is ...")
    assert "(Connection closed by peer [127.0.0.1]:391)" in nodes.lost_rank_message(detail, [])
    assert nodes.lost_rank_message(ValueError("bad"), ["train"]) is None  # keeps its traceback
    assert nodes.lost_rank_message(None, ["train"]) is None  # Ctrl-C: "interrupted"
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert nodes.lost_rank_message(gloo, ["train"]) is None  # one process has no peers


def test_scratch_is_kept_per_host_only_across_nodes(monkeypatch, tmp_path):
    import socket

    from dapo_bench import dist

    monkeypatch.setattr(dist, "_initialised", lambda: False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")  # one node: the default folder
    dist.keep_scratch_per_node()
    assert "TORCH_EXTENSIONS_DIR" not in os.environ
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")  # two nodes of 2 ranks
    dist.keep_scratch_per_node()
    assert os.environ["TORCH_EXTENSIONS_DIR"] == str(
        tmp_path / "torch_extensions" / socket.gethostname())
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", "/mine")  # the user's choice stands
    dist.keep_scratch_per_node()
    assert os.environ["TORCH_EXTENSIONS_DIR"] == "/mine"


def test_torchruns_sigterm_stops_a_rank_with_the_lost_node_line(monkeypatch):
    from dapo_bench import dist, nodes

    monkeypatch.setattr(dist, "_initialised", lambda: False)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "none")  # what torchrun gives its ranks
    monkeypatch.delenv("DAPO_BENCH_LAUNCH_SAID", raising=False)
    monkeypatch.setattr(nodes, "_STOPPED", [False])
    old = signal.getsignal(signal.SIGTERM)
    try:
        nodes.stop_on_launcher_sigterm()
        with pytest.raises(KeyboardInterrupt):  # as Ctrl-C: artifacts kept on the way out
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs before this returns
    finally:
        signal.signal(signal.SIGTERM, old)
    line = nodes.lost_rank_message(None, ["train"])
    assert line.startswith("error: rank 0/2 on ") and "torchrun stopped this rank (SIGTERM)" in line
    monkeypatch.setenv("DAPO_BENCH_LAUNCH_SAID", "/nonexistent")
    assert nodes.lost_rank_message(None, ["train"]) == ""  # dapo_bench.launch prints the line
