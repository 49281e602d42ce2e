"""``python -m dapo_bench.launch [torchrun options] -m dapo_bench.cli ...``: torchrun, ending
a failed run with one line.

torchrun itself ends a failed run with its own report after the rank's one-line error: a
``ChildFailedError`` box (about 30 lines) or, on a node whose agent lost the rendezvous store
(its host node went away), a ``RendezvousConnectionError`` traceback, with logged warnings
before it. This runs torchrun's launcher (``torch.distributed.run.run``, the same options) with
its warnings off, and ends:

- silently, with the rank's exit status, where the rank exited with a status of its own (it
  printed its line: a user error, or "a node was lost" with the command that resumes);
- with one line where a rank was killed by a signal (it could say nothing) or the rendezvous
  was lost: what happened, and the launch command that resumes, rerun on every node; unless
  a rank of this node already printed why it stopped (it notes that in the file named by
  ``$DAPO_BENCH_LAUNCH_SAID``): one line per node either way.

Not covered: the ``deepspeed`` launcher; a rank's own traceback for an unexpected error (kept:
it is the information).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import shlex
import signal
import socket
import sys
import tempfile

LOGGING = ("agent.server.api", "agent.server.local_elastic_agent", "multiprocessing.api",
           "rendezvous.dynamic_rendezvous", "rendezvous.c10d_rendezvous_backend")
SAID = "DAPO_BENCH_LAUNCH_SAID"  # where a rank notes that it printed why it stopped
QUIET = {"LOGLEVEL": "CRITICAL", "TORCH_CPP_LOG_LEVEL": "ERROR"}  # torchrun's warnings


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    resume = ("rerun the same launch command on every node to resume from the last checkpoint: "
              + shlex.join([sys.executable, "-m", "dapo_bench.launch", *argv]))
    quiet = {k: v for k, v in QUIET.items() if k not in os.environ}  # the user's own stand
    os.environ.update(quiet)  # read when torch's loggers are made (import time)
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.elastic.rendezvous import RendezvousError
    from torch.distributed.run import parse_args, run

    for mod in LOGGING:  # their loggers made now, while quiet
        importlib.import_module(f"torch.distributed.elastic.{mod}")
    if "LOGLEVEL" in quiet:  # and those that take their parent's level
        logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    for k in quiet:  # the ranks log as usual
        del os.environ[k]
    fd, said = tempfile.mkstemp(prefix="dapo-bench-launch-")  # a rank's line, once it printed one
    os.close(fd)
    os.environ[SAID] = said
    args, spoken = parse_args(argv), False
    try:
        run(args)
        return 0
    except ChildFailedError as e:
        killed = {r: f for r, f in e.failures.items() if f.exitcode < 0}
        if not killed:
            return max(f.exitcode for f in e.failures.values())  # the rank said why
        rank, f = min(killed.items())
        line = (f"rank {rank} (pid {f.pid}) on {socket.gethostname()} was killed by "
                f"{_signal_name(f.exitcode)}; the other nodes stop")
    except RendezvousError as e:
        line = (f"lost the rendezvous at {args.rdzv_endpoint} ({type(e).__name__}): a node was "
                f"lost or cannot be reached")
    except SignalException as e:  # this launcher was stopped (Ctrl-C: the ranks said so)
        if e.sigval == signal.SIGINT:
            return 130
        line = f"stopped by {e.sigval.name}"
    finally:
        with contextlib.suppress(OSError):
            spoken = os.path.getsize(said) > 0
            os.unlink(said)
    if not spoken:
        print(f"error: {line}; {resume}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
