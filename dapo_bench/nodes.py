"""What a run over several nodes needs beyond :mod:`dapo_bench.dist`: one shared run directory,
node-local scratch, and a one-line error when a node is lost.

- :func:`check_shared_dir` (every rank, before any work): rank 0 writes a fresh nonce into the
  run directory, every rank reads it back; a rank that reads another nonce or none (its node
  mounts another folder at that path, or none) makes every rank stop with one
  :class:`UserError` naming the path and that rank's node, before a split run is written.
- ``dist.keep_scratch_per_node`` (called by ``dist.init``; it lives there so that ``dist``
  imports nothing of this module): on a run over several nodes, ``$TORCH_EXTENSIONS_DIR`` (where
  DeepSpeed builds its ops) defaults to a folder per host, so nodes that share a home directory
  do not build into, or load from, one folder. Other scratch is already per process: the code
  sandbox's temporary folders (``tempfile``, in the node's own ``/tmp``).
- :func:`lost_rank_message`: a collective that failed because a peer went away (gloo's
  "Connection closed by peer", a store op that lost the launcher's store, a collective past
  its timeout) and the SIGTERM with which torchrun stops a rank when another node's process
  ended, as one line: what happened, on which rank and node, and the command that resumes the
  run (the same launch command on every node: finished stages are kept, a training stage
  restarts from its last ``--checkpoint-every`` checkpoint). Under ``dapo_bench.launch`` a
  rank stopped by SIGTERM leaves the line to the launcher, and a rank that printed its line
  notes it in ``$DAPO_BENCH_LAUNCH_SAID`` (one line per node).

The collective timeout is ``dist.TIMEOUT`` (``$DAPO_BENCH_DIST_TIMEOUT_H`` hours, default 12).
Not covered: a node that hangs without closing its connections is only noticed at that
timeout; elastic membership (a lost node is not replaced, the run stops).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import uuid
from pathlib import Path

from dapo_bench import dist
from dapo_bench.errors import UserError

NONCE = ".dapo-bench-shared-check"
_STOPPED = [False]  # set when the launcher's SIGTERM arrived


def where() -> str:
    """``rank R/W on HOST`` (with torchrun's node index where it gives one)."""
    node = os.environ.get("GROUP_RANK")
    host = socket.gethostname() + (f" (node {node})" if node is not None else "")
    return f"rank {dist.rank()}/{dist.world_size()} on {host}"


def check_shared_dir(path: str | os.PathLike) -> None:
    """Stop every rank with one UserError unless every rank sees the folder rank 0 sees at
    ``path`` (a collective; a no-op in one process)."""
    if dist.world_size() == 1:
        return
    path = Path(path)
    probe = path / NONCE
    nonce = ""
    if dist.is_main():
        nonce = uuid.uuid4().hex
        path.mkdir(parents=True, exist_ok=True)
        probe.write_text(nonce)
    nonce = dist.broadcast(nonce)
    try:
        seen = probe.read_text()
    except OSError as e:
        seen = f"nothing ({e.strerror})"
    if seen != nonce:
        seen = seen if seen.startswith("nothing") else "another run's check"
    verdicts = dist.all_gather("" if seen == nonce else f"{where()} read {seen}")
    if dist.is_main():
        probe.unlink(missing_ok=True)
    bad = [v for v in verdicts if v]
    if bad:
        raise UserError(f"{path}: not the same folder on every node ({'; '.join(bad)}); "
                        f"every node must mount the shared run directory (--out) at this path")


def stop_on_launcher_sigterm() -> None:
    """Under torchrun: its SIGTERM (sent to the ranks when another node's process ended) stops
    this rank as Ctrl-C does (artifacts kept), remembered for :func:`lost_rank_message`."""
    if "TORCHELASTIC_RUN_ID" not in os.environ:
        return

    def stopped(signum, frame):
        _STOPPED[0] = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stopped)


def _launch_command(argv: list[str]) -> str:
    """The command that started this run: torchrun's own command line (this rank's parent)
    where it can be read, else ``dapo-bench ARGS`` under it."""
    try:
        raw = Path(f"/proc/{os.getppid()}/cmdline").read_bytes().split(b"\0")
        parent = [a.decode() for a in raw if a]
    except OSError:
        parent = []
    if any("torchrun" in a or a in ("torch.distributed.run", "dapo_bench.launch")
           for a in parent[:3]):
        return shlex.join(parent)
    return "torchrun ... " + shlex.join(["-m", "dapo_bench.cli", *argv])


def _peer_lost(exc: BaseException) -> str:
    """Why ``exc`` means another rank went away ('' if it does not)."""
    try:
        from torch.distributed import DistNetworkError
    except ImportError:  # pragma: no cover - torch is a hard dependency
        return ""
    lost = ("Connection closed by peer", "Connection reset by peer", "Broken pipe",
            "Socket Timeout", "Timed out", "timed out", "Connection refused",
            "failed to pass monitoredBarrier")  # the last: TORCH_DISTRIBUTED_DEBUG=DETAIL
    # Any line: under TORCH_DISTRIBUTED_DEBUG=DETAIL gloo's line comes second, after
    # "ProcessGroupWrapper: Monitored Barrier encountered error running collective: ...".
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()] or [type(exc).__name__]
    for line in lines:
        text = re.sub(r"^\[[^\]]*\.(cc|cpp|hpp):\d+\]\s*", "", line)  # gloo's source location
        text = text.split(". ")[0]  # "...: Connection reset by peer. This is typically caused"
        if isinstance(exc, DistNetworkError) or any(s in text for s in lost):
            return text if len(text) < 160 else text[:157] + "..."
    return ""


def lost_rank_message(exc: BaseException | None, argv: list[str]) -> str | None:
    """The one line for a rank stopped because another node was lost; None for other errors;
    '' for a rank that ``dapo_bench.launch`` stopped (the launcher prints the line)."""
    if exc is None and not _STOPPED[0]:
        return None
    said = os.environ.get("DAPO_BENCH_LAUNCH_SAID")  # under dapo_bench.launch
    if _STOPPED[0] and said:
        return ""  # the launcher prints the line
    if _STOPPED[0]:
        what = ("a node was lost, or the launch was stopped: torchrun stopped this rank "
                "(SIGTERM)")
    elif dist.world_size() > 1 and exc is not None and (why := _peer_lost(exc)):
        what = f"a node was lost: a collective lost contact with another rank ({why})"
    else:
        return None
    if said:
        with contextlib.suppress(OSError), open(said, "a") as f:
            f.write(what + "\n")  # the launcher adds no line of its own
    return (f"error: {where()}: {what}; artifacts kept; rerun the same launch command on every "
            f"node to resume from the last checkpoint: {_launch_command(argv)}")
