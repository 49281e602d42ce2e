"""A script of bench/ imported as a module, as it runs: bench/ first on ``sys.path``, so that
its sibling imports (``script_cli``, ``codeforces_stdin``) resolve, and the module registered
in ``sys.modules`` (a dataclass resolves its annotations through it)."""

import importlib
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_script(name: str):
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)
