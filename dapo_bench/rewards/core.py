"""What the framework adapters share: one long-lived verifier per (name, options), and a batch of
completions verified against their golds through the verifier's own rules.

The verifiers are the registered ones (``VERIFIERS``: ``math``, ``code``, ...), created on first
use and kept for the life of the process, so that their worker pools (sympy workers; sandbox
workers) are started once and reused by every call; they are closed at exit. A batch goes
through ``verify_batch``, spread over the pool as ``dapo-bench verify`` spreads it.

How a completion becomes the verifier's input and what a gold is belong to the verifier
(its ``input_from`` and ``check_gold``, verifiers.base); here every gold is checked before
anything runs, so a user's mistake (an empty, NaN or missing gold, a bare string where a column
of golds belongs, a chat with no assistant turn) is a UserError naming the item, never a 0.

Not here: any framework's own types (no torch, no trl, no verl is imported).
"""

from __future__ import annotations

import atexit
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from dapo_bench.errors import UserError
from dapo_bench.verifiers.base import VERIFIERS, Verdict, completion_text, short

_VERIFIERS: dict[tuple, Any] = {}
_LOCK = threading.Lock()

__all__ = ["close_all", "completion_text", "shared_verifier", "verify_completions"]


def plain(value: Any) -> Any:
    """*value* with every mapping a dict and every list-like a list (verl's reward kwargs are
    OmegaConf containers)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [plain(v) for v in value]
    return value


def shared_verifier(name: str, **options: Any):
    """The process's verifier *name* with *options* (created once; closed at exit)."""
    options = plain(options)
    key = (name, json.dumps(options, sort_keys=True, default=str))
    with _LOCK:
        v = _VERIFIERS.get(key)
        if v is None:
            v = _VERIFIERS[key] = VERIFIERS.get(name)(**options)
        return v


@atexit.register
def close_all() -> None:
    """Close every shared verifier (their worker pools); the next call starts new ones."""
    with _LOCK:
        vs = list(_VERIFIERS.values())
        _VERIFIERS.clear()
    for v in vs:
        v.close()


def column(values: Any, name: str, n: int | None = None) -> list:
    """*values* as a list of one value per completion (a list, tuple or array): UserError for a
    bare string (it would be read character by character), a dict or a scalar, and for a
    length other than *n*."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__") or \
            not hasattr(values, "__iter__"):
        raise UserError(f"{name}: expected one value per completion (a list), got "
                        f"{type(values).__name__} {short(values)}")
    if n is not None and len(values) != n:
        raise UserError(f"{name}: {len(values)} values for {n} completions")
    return list(values)


def verify_completions(verifier: str, completions: Any, golds: Any,
                       finished: Any = None, options: dict | None = None,
                       gold_name: str = "gold", where: str = "completions") -> list[Verdict]:
    """One batch of completions (strings or chat messages) against their golds, in order, on
    the shared verifier *verifier*; ``finished[i]`` False: completion i was cut off at the
    token cap (None: all finished). Every gold is checked first (the verifier's
    ``check_gold``, naming ``gold_name[i]``), then every completion becomes its input (its
    ``input_from``)."""
    cls = VERIFIERS.get(verifier)
    completions = column(completions, where)
    golds = column(golds, gold_name, len(completions))
    if finished is not None:
        finished = [bool(f) for f in column(finished, "finished", len(completions))]
    for i, g in enumerate(golds):
        cls.check_gold(g, f"{gold_name}[{i}]")
    preds = [cls.input_from(c, g, where=f"{where}[{i}]")
             for i, (c, g) in enumerate(zip(completions, golds))]
    v = shared_verifier(verifier, **(options or {}))
    return v.verify_batch(preds, golds, finished=finished)
