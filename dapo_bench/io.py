"""File I/O with clear errors and atomic writes.

Every artifact is written to a temporary file beside its target and renamed into place, so a
killed run never leaves a half-written artifact; it gets the mode a plain ``open()`` would give
it (``0666 & ~umask``, as the append-only logs get), not the temporary file's private 0600.
JSONL readers report ``file:line`` on bad input.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from dapo_bench.errors import UserError

T = TypeVar("T")


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


def check_input_file(path: str | os.PathLike) -> Path:
    """``path`` as a Path if it is a regular file; else a UserError saying what it is."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if not path.is_file():
        raise UserError(f"{path}: not a regular file")
    return path


def read_text(path: str | os.PathLike) -> str:
    """A UTF-8 text file's contents; binary bytes are a UserError naming file:line."""
    path = check_input_file(path)
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise UserError(f"{path}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x}); "
                        "is this a binary file?") from None


def iter_jsonl(path: str | os.PathLike, *, allow_partial_tail: bool = False) -> Iterator[dict]:
    """Yield the JSON objects of a JSONL file; a bad line raises UserError naming file:line.

    With ``allow_partial_tail`` a final line without a newline that does not parse (a write cut
    short by a kill) is ignored instead: used when resuming from an append-only log.
    """
    for _, obj in iter_jsonl_lines(path, allow_partial_tail=allow_partial_tail):
        yield obj


def iter_jsonl_lines(path: str | os.PathLike, *,
                     allow_partial_tail: bool = False) -> Iterator[tuple[int, dict]]:
    """``iter_jsonl`` with each object's line number (for ``FILE:LINE`` messages)."""
    path = Path(path)
    if allow_partial_tail and path.is_file():  # a kill may cut a multi-byte character short
        text = path.read_bytes().decode("utf-8", errors="replace")
    else:
        text = read_text(path)
    # lines end at "\n" only (str.splitlines would also split at U+2028, U+0085, ... that
    # json.dumps(ensure_ascii=False) writes raw inside a string)
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
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
        yield i, obj


def rows_digest(rows) -> str:
    """sha256 of the rows as canonical JSON lines (sorted keys), first 16 hex digits."""
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row, sort_keys=True, ensure_ascii=False, default=str).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the body (back to what it was after): for building
    many acyclic objects at once, e.g. a run's artifact rows. Each collection of the oldest
    generation rescans the whole heap (the model's and the libraries' objects too): reading
    ``mc.jsonl`` of the toy preset set off 1-2 of them, 0.3-0.5 s a stage on each rank."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_jsonl(path: str | os.PathLike, row: Callable[[dict], T] | None = None,
               **kw: Any) -> list[Any]:
    """The JSON objects of a JSONL file (:func:`iter_jsonl`), each made ``row(obj)`` when
    given (an artifact's reader, e.g. ``McRow.from_row``), read with the collector paused (JSON
    values and the rows made of them hold no reference cycles)."""
    with gc_paused():
        return [row(obj) if row else obj for obj in iter_jsonl(path, **kw)]


def read_json(path: str | os.PathLike) -> Any:
    path = Path(path)
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None


def read_yaml_mapping(path: str | os.PathLike) -> dict:
    """A YAML file whose top level is a mapping (empty file: {}); errors name file and line."""
    import yaml

    path = Path(path)
    text = read_text(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise UserError(f"{path}{line}: malformed YAML ({getattr(e, 'problem', e)})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a mapping at the top level")
    return data


_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]*")


def check_run_id(run_id: str) -> str:
    """A run id is one directory name: letters, digits and ``._+=-``; no path separator, no
    ``..``, not hidden (so ``--out/<run-id>`` stays inside ``--out``)."""
    if not _RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise UserError(f"--run-id {run_id!r}: must be one directory name (letters, digits, "
                        "'._+=-'; no '/', no '..')")
    return run_id


def _probe_dir(path: Path, flag: str) -> None:
    """``path`` (or its nearest existing ancestor) is a directory this process can write in."""
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        what = "not a directory" if probe == path else f"{probe} is not a directory"
        raise UserError(f"{flag} {path}: {what}")
    try:
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=".dapo-bench-probe.")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise UserError(f"{flag} {path}: not writable ({e.strerror})") from None


def check_out_dir(path: str | os.PathLike, flag: str = "--out") -> Path:
    """Fail now, not after the work, when ``path`` cannot be an output directory (nothing is
    created)."""
    path = Path(path)
    _probe_dir(path, flag)
    return path


def check_out_file(path: str | os.PathLike, flag: str = "--out", *,
                   inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """Fail now when ``path`` cannot be written as an output file: a directory, an unwritable
    place, or one of the ``inputs`` (which the output would overwrite)."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{flag} {path}: is a directory, not a regular file")
    for src in inputs:
        src = Path(src)
        if path.exists() and src.exists() and os.path.samefile(path, src):
            raise UserError(f"{flag} {path}: is the input file; write the output elsewhere")
    _probe_dir(path.parent, flag)
    return path


class Closing:
    """``with x:`` closes ``x`` at the end (for the logs below and their wrappers)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):  # the subclass (typing.Self needs 3.11)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class JsonlAppender(Closing):
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
