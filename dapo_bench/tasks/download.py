"""Downloading a task's file from its origin repository: pinned URL, checked, cached.

A spec's ``source.url`` names a raw file at a commit (``https://raw.githubusercontent.com/
OWNER/REPO/COMMIT/PATH``) and its sha256. The first load downloads it (30 s timeout, at most
``MAX_BYTES``), checks the digest and writes it atomically to
``<cache>/data/<task>/<sha256[:16]><suffix>``; later loads read the cached copy (its digest
checked again) and never touch the network. ``<cache>`` is ``DAPO_BENCH_CACHE``, else
``$XDG_CACHE_HOME/dapo-bench``, else ``~/.cache/dapo-bench``. A digest that differs is an error
naming both digests, and nothing is cached. ``file://`` URLs are read the same way (a local
mirror); ``DAPO_BENCH_OFFLINE=1`` forbids downloading (a cached or ``file://`` copy still works).

Not covered: resuming a partial download, proxies beyond what urllib reads from the
environment, archives (an origin file must be the JSONL/JSON/parquet the task reads).
"""

from __future__ import annotations

import hashlib
import http.client
import os
import sys
import urllib.request
from pathlib import Path

from dapo_bench.errors import UserError
from dapo_bench.io import atomic_write_bytes
from dapo_bench.tasks.spec import UrlSource

CACHE_ENV = "DAPO_BENCH_CACHE"
OFFLINE_ENV = "DAPO_BENCH_OFFLINE"
TIMEOUT_S = 30
MAX_BYTES = 512 << 20


def cache_dir() -> Path:
    """The user cache directory of dapo-bench (not created here)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "dapo-bench"


def cached_path(task: str, src: UrlSource) -> Path:
    """Keyed by the content digest, not the URL: a mirror and the origin share one copy."""
    suffix = Path(src.url.split("?")[0]).suffix.lower()
    return cache_dir() / "data" / task / f"{src.sha256[:16]}{suffix}"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_url(task: str, url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as r:
            data = r.read(MAX_BYTES + 1)
    except (OSError, ValueError, http.client.HTTPException) as e:  # URLError, HTTPError, timeouts
        raise UserError(f"task {task}: cannot download {url} ({type(e).__name__}: {e}); "
                        f"pass --data-dir DIR or --data-file PATH with a local copy") from None
    if len(data) > MAX_BYTES:
        raise UserError(f"task {task}: {url} is larger than {MAX_BYTES >> 20} MiB")
    return data


def fetch(task: str, src: UrlSource) -> Path:
    """The local path of ``src``'s file: the cached copy, downloaded first when missing."""
    dest = cached_path(task, src)
    if dest.is_file() and _sha256(dest.read_bytes()) == src.sha256:
        return dest
    offline = os.environ.get(OFFLINE_ENV, "") not in ("", "0")
    if offline and not src.url.startswith("file://"):
        raise UserError(f"task {task}: {OFFLINE_ENV} is set and {dest} is not cached; "
                        f"pass --data-dir DIR or --data-file PATH with a local copy")
    if not src.url.startswith("file://"):
        print(f"task {task}: downloading {src.url} (license: {src.license}) to {dest}",
              file=sys.stderr)
    data = _read_url(task, src.url)
    got = _sha256(data)
    if got != src.sha256:
        raise UserError(f"task {task}: {src.url} has sha256 {got}, the spec pins {src.sha256} "
                        f"(the origin changed or the download is corrupt); nothing was cached")
    atomic_write_bytes(dest, data)
    return dest
