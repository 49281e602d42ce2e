"""What the framework adapters share: one long-lived verifier per (name, options), the text of a
completion in any of the forms trainers pass, and the prediction a verifier is given.

The verifiers are the registered ones (``VERIFIERS``: ``math``, ``code``), created on first use
and kept for the life of the process, so that their worker pools (sympy workers; sandbox
workers) are started once and reused by every call; they are closed at exit. A batch goes
through ``verify_batch``, spread over the pool as ``dapo-bench verify`` spreads it.

Not here: any framework's own types (no torch, no trl, no verl is imported).
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Sequence
from typing import Any

from dapo_bench.errors import UserError
from dapo_bench.verifiers.base import VERIFIERS, Verdict

_VERIFIERS: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def shared_verifier(name: str, **options: Any):
    """The process's verifier *name* with *options* (created once; closed at exit)."""
    key = (name, tuple(sorted(options.items())))
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


def completion_text(completion: Any, where: str = "completion") -> str:
    """The text of one completion: a string as is; a conversational completion (a list of
    ``{"role", "content"}`` messages, as TRL passes it) is the content of its assistant
    messages, joined by newlines. Content given as parts keeps the text parts."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if not isinstance(completion, (list, tuple)):
        raise UserError(f"{where}: expected a string or a list of messages, "
                        f"got {type(completion).__name__}")
    texts = []
    for k, msg in enumerate(completion):
        if not isinstance(msg, dict) or "content" not in msg:
            raise UserError(f"{where}[{k}]: a message is a dict with 'role' and 'content'")
        if msg.get("role", "assistant") != "assistant":
            continue
        content = msg["content"]
        if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
            content = "".join(p.get("text", "") for p in content
                              if isinstance(p, dict) and p.get("type") == "text")
        texts.append("" if content is None else str(content))
    return "\n".join(texts)


def prediction(verifier: str, text: str) -> str:
    """What the verifier is given for a response: its answer, not its thinking
    (``verifiers.base.answer_text``); math reads the whole answer (it finds the answer in it);
    code runs the last fenced python block (``extract_code``), or the whole text."""
    from dapo_bench.verifiers.base import answer_text

    text = answer_text(text)
    if verifier == "code":
        from dapo_bench.verifiers.code import extract_code

        return extract_code(text)
    return text


def verify_texts(verifier: str, texts: Sequence[str], golds: Sequence[Any],
                 options: dict | None = None) -> list[Verdict]:
    """One batch of responses against their golds, in order, on the shared verifier."""
    if len(texts) != len(golds):
        raise UserError(f"{len(texts)} completions but {len(golds)} golds")
    v = shared_verifier(verifier, **(options or {}))
    return v.verify_batch([prediction(verifier, t) for t in texts], list(golds))
