"""Reading a task's rows: a local file, a ``--data-dir``, a built-in generator, the Hub, or a
pinned download from the benchmark's origin repository.

Resolution order for a task (first that applies wins):

1. ``path``: an explicit JSONL / JSON (a list of objects) / parquet file;
2. ``data_dir`` (or the ``DAPO_BENCH_DATA_DIR`` environment variable): ``DIR/<source.file>``,
   e.g. ``DIR/math/gsm8k.jsonl``; a missing file is an error (no silent fall-through);
3. a built-in generator (the embedded ``arith`` task): no files at all;
4. the Hugging Face Hub through ``datasets.load_dataset`` (id, config, split, revision; the id
   may be a local directory in hub format, e.g. a ``huggingface-cli download`` snapshot);
5. ``url``: the origin's file at a pinned commit, sha256-checked and cached (``tasks.download``).

With a local file, ``HF_HUB_OFFLINE``/``HF_DATASETS_OFFLINE`` are set so that nothing touches
the network. When the Hub is offline (``HF_HUB_OFFLINE=1``) or unreachable, the error names the
file to put under ``--data-dir`` or the flag to pass; it never waits on the network for long
(``HF_HUB_ETAG_TIMEOUT``/``HF_HUB_DOWNLOAD_TIMEOUT`` are capped at 10 s unless set).

Not covered: streaming, caching converted copies.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any

from dapo_bench.errors import UserError
from dapo_bench.io import check_input_file, read_json, read_jsonl
from dapo_bench.tasks.spec import HubSource, TaskSpec, UrlSource

DATA_DIR_ENV = "DAPO_BENCH_DATA_DIR"


def _set_offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"


def read_file(path: Path) -> list[dict]:
    """Rows of a JSONL, JSON (list of objects, or {"data"|"rows": [...]}) or parquet file."""
    check_input_file(path)  # missing, or a directory: "not a regular file"
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return read_jsonl(path)
    if suffix == ".json":
        obj = read_json(path)
        if isinstance(obj, dict):
            obj = obj.get("data", obj.get("rows"))
        if not isinstance(obj, list):
            raise UserError(f"{path}: expected a JSON list of objects")
        for i, row in enumerate(obj):
            if not isinstance(row, dict):
                raise UserError(f"{path}: item {i} is a {type(row).__name__}, not an object")
        return obj
    if suffix == ".parquet":
        _set_offline()
        import datasets

        try:
            ds = datasets.load_dataset("parquet", data_files=str(path), split="train")
        except Exception as e:  # noqa: BLE001 - any reader failure is the file's fault
            raise UserError(f"{path}: cannot read parquet ({type(e).__name__}: {e})") from None
        return [dict(r) for r in ds]
    raise UserError(f"{path}: unknown file type {suffix!r} (use .jsonl, .json or .parquet)")


def _hint(spec: TaskSpec) -> str:
    if spec.source.file:
        return (f"pass --data-dir DIR with DIR/{spec.source.file} "
                f"(or set {DATA_DIR_ENV}), or --data-file PATH")
    return "pass --data-file PATH (JSONL, JSON or parquet)"


def load_hub(spec: TaskSpec, hub: HubSource) -> list[dict]:
    where = f"{hub.path}" + (f" ({hub.name})" if hub.name else "") + f" split {hub.split!r}"
    if hub.revision:
        where += f" revision {hub.revision}"
    local = Path(hub.path).expanduser().is_dir()  # a hub-format snapshot on disk
    if not local and (os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0") or os.environ.get(
        "HF_DATASETS_OFFLINE", ""
    ) not in ("", "0")):
        raise UserError(f"task {spec.name}: offline and no local copy of {where}; {_hint(spec)}")
    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "10")
    os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "10")
    import datasets

    try:
        ds = datasets.load_dataset(hub.path, hub.name, split=hub.split, revision=hub.revision)
    except Exception as e:  # noqa: BLE001 - network, auth, missing config: all user-fixable
        msg = str(e).splitlines()[0][:200] if str(e) else ""
        raise UserError(
            f"task {spec.name}: cannot load {where} from the Hugging Face Hub "
            f"({type(e).__name__}: {msg}); {_hint(spec)}"
        ) from None
    return [dict(r) for r in ds]


def load_url(spec: TaskSpec, src: UrlSource) -> tuple[list[dict], dict, str]:
    """Rows of a pinned origin file (downloaded and cached on first use), field overrides, and
    the origin URL as the rows' description."""
    from dapo_bench.tasks.download import fetch

    local = fetch(spec.name, src)
    try:
        rows = read_file(local)
    except UserError as e:
        raise UserError(f"task {spec.name}: {src.url}: {e}") from None
    return rows, dict(src.fields), src.url


def load_builtin(spec: TaskSpec, split: str | None) -> list[dict]:
    ref = spec.source.builtin or ""
    mod, _, attr = ref.partition(":")
    split = split or spec.source.split
    if spec.source.splits and split not in spec.source.splits:
        raise UserError(f"task {spec.name}: unknown split {split!r} "
                        f"(splits: {', '.join(spec.source.splits)})")
    try:
        fn = getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError) as e:
        raise UserError(f"task {spec.name}: built-in source {ref!r} unavailable ({e})") from None
    return list(fn(split))


def load_rows(
    spec: TaskSpec,
    *,
    path: str | os.PathLike | None = None,
    data_dir: str | os.PathLike | None = None,
    split: str | None = None,
) -> tuple[list[dict], dict, str]:
    """(rows, field overrides, a description of where they came from)."""
    if path is not None:
        _set_offline()
        p = Path(path)
        return read_file(p), {}, str(p)
    data_dir = data_dir or os.environ.get(DATA_DIR_ENV) or None
    if data_dir is not None and spec.source.file:
        d = Path(data_dir)
        if not d.is_dir():
            raise UserError(f"--data-dir {d}: no such directory")
        p = d / spec.source.file
        if not p.is_file():
            raise UserError(f"task {spec.name}: {p} not found; put the benchmark file there "
                            f"or pass --data-file PATH")
        _set_offline()
        return read_file(p), {}, str(p)
    if spec.source.builtin:
        rows = load_builtin(spec, split)
        return rows, {}, f"{spec.source.builtin}({split or spec.source.split!r})"
    if spec.source.hf is not None:
        hub = spec.source.hf
        if split:
            from dataclasses import replace

            hub = replace(hub, split=split)
        return load_hub(spec, hub), dict(hub.fields), f"hf:{hub.path}"
    if spec.source.url is not None:
        return load_url(spec, spec.source.url)
    raise UserError(f"task {spec.name}: no data source; {_hint(spec)}")


def parse_maybe_literal(value: Any) -> Any:
    """A field stored as a JSON or Python-literal string (common in exported code datasets)."""
    if not isinstance(value, str):
        return value
    s = value.strip()
    if not s or s[0] not in "[{":
        return value
    try:
        return json.loads(s)
    except json.JSONDecodeError:
        import ast

        try:
            return ast.literal_eval(s)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
