"""Append-only, resumable JSONL logs of group rows, one shard per rank.

A generation stage logs each finished row as it goes, so a killed stage reruns only what it
lacks. With several ranks each rank appends to its own shard file (``<name>.rank<r>.jsonl``
beside ``<name>.jsonl``), so no two processes write one file; every log knows the rows of the
merged file and of every shard (a run resumed with another number of ranks still skips them).
:meth:`ResumableLog.merge` (rank 0, after the ranks are done) writes the merged file in
request order, byte for byte what one process appends, and removes the shards.

A half-written last line (a kill during a write) is dropped on open. The log holds rows only:
turning a row back into a ``Group`` is ``training.rollouts.group_from_row`` (rollouts imports
this module, never the reverse).
Not covered: several runs writing one directory at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dapo_bench import dist
from dapo_bench.io import Closing, JsonlAppender, atomic_write_jsonl, iter_jsonl


class ResumableLog(Closing):
    """Rows keyed by ``key``: ``done`` holds every row logged so far (all shards)."""

    def __init__(self, path: str | Path, list_field: str = "responses"):
        self.path = Path(path)
        self.list_field = list_field
        world = dist.world_size()
        own = self.path if world == 1 else self.shard_path(dist.rank())
        self._app = JsonlAppender(own)  # repairs a cut tail first
        self.done: dict[str, dict] = {}
        self._read()

    def shard_path(self, rank: int) -> Path:
        return self.path.with_name(f"{self.path.stem}.rank{rank}{self.path.suffix}")

    def shards(self) -> list[Path]:
        return sorted(self.path.parent.glob(f"{self.path.stem}.rank*{self.path.suffix}"))

    def _read(self) -> None:
        for p in [self.path, *self.shards()]:
            if p.is_file() and p.stat().st_size:
                for row in iter_jsonl(p, allow_partial_tail=True):
                    self.done.setdefault(row["key"], row)

    def add(self, row: dict) -> None:
        if row["key"] not in self.done:
            self._app.write(row)
            self.done[row["key"]] = row

    def merge(self, keys: Sequence[str]) -> None:
        """Every rank calls it once its rows are logged: rank 0 writes the merged file (rows in
        ``keys`` order) and removes the shard files; a no-op when there are none."""
        self.close()
        dist.barrier()
        if dist.is_main() and self.shards():
            self._read()
            atomic_write_jsonl(self.path, [self.done[k] for k in keys if k in self.done])
            for p in self.shards():
                p.unlink()
        dist.barrier()

    def close(self) -> None:
        self._app.close()
