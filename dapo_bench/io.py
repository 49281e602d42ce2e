"""File I/O with clear errors and atomic writes.

Every artifact is written to a temporary file beside its target and renamed into place, so a
killed run never leaves a half-written artifact; it gets the mode a plain ``open()`` would give
it (``0666 & ~umask``, as the append-only logs get), not the temporary file's private 0600.
JSONL readers report ``file:line`` on bad input.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from dapo_bench.errors import UserError


def _umask() -> int:
    try:  # Linux >= 4.7 reports it without changing it
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)  # elsewhere: read it by setting it (and put it back at once)
    os.umask(mask)
    return mask


def public_mode(fd_or_path: int | str | os.PathLike, directory: bool = False) -> None:
    """Give a file made by ``tempfile`` (mode 0600, dirs 0700) the mode ``open()`` or
    ``mkdir()`` would have given it: 0666 (0777 for a directory) less the umask."""
    os.chmod(fd_or_path, (0o777 if directory else 0o666) & ~_umask())


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        public_mode(fd)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def atomic_write_jsonl(path: str | os.PathLike, rows: Iterable[Any]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def iter_jsonl(path: str | os.PathLike, *, allow_partial_tail: bool = False) -> Iterator[dict]:
    """Yield the JSON objects of a JSONL file; a bad line raises UserError naming file:line.

    With ``allow_partial_tail`` a final line without a newline that does not parse (a write cut
    short by a kill) is ignored instead: used when resuming from an append-only log.
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    with path.open("r", encoding="utf-8") as f:
        lines = f.readlines()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            if allow_partial_tail and i == len(lines) and not line.endswith("\n"):
                return
            raise UserError(f"{path}:{i}: invalid JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(obj, dict):
            raise UserError(f"{path}:{i}: expected a JSON object, got {type(obj).__name__}")
        yield obj


def rows_digest(rows) -> str:
    """sha256 of the rows as canonical JSON lines (sorted keys), first 16 hex digits."""
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row, sort_keys=True, ensure_ascii=False, default=str).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def read_jsonl(path: str | os.PathLike, **kw: Any) -> list[dict]:
    return list(iter_jsonl(path, **kw))


def read_json(path: str | os.PathLike) -> Any:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise UserError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None


def read_yaml_mapping(path: str | os.PathLike) -> dict:
    """A YAML file whose top level is a mapping (empty file: {}); errors name file and line."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise UserError(f"{path}{line}: malformed YAML ({getattr(e, 'problem', e)})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a mapping at the top level")
    return data


class JsonlAppender:
    """Append-only JSONL log, flushed and fsynced per row (resumable artifacts)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_tail()
        self._f = self.path.open("a", encoding="utf-8")

    def _repair_tail(self) -> None:
        # Drop a final line cut short by a kill, so appends start on a fresh line.
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with self.path.open("r+b") as f:
                f.truncate(cut)

    def write(self, row: Any) -> None:
        self._f.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> JsonlAppender:  # noqa: PYI034 (typing.Self needs 3.11)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
