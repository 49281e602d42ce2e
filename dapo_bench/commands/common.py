"""Conventions every sub-command follows (tests/commands/test_cli.py checks them on the built CLI).

- Long flags only, spelled as in lm-evaluation-harness / vLLM / TRL (``--model``, ``--tasks``,
  ``--limit``, ``--max-new-tokens``); the one short flag is ``-h``.
- Lists are comma-separated and the flag may be repeated (``--tasks a,b`` == ``--tasks a
  --tasks b``), parsed by :func:`split_names` wherever a flag takes names.
- Train's evaluation flags are eval's with an ``eval-`` prefix and the same meaning
  (``--eval-tasks``, ``--eval-limit``, ``--eval-max-new-tokens``).
- Booleans are ``--x/--no-x`` switches; every ``--help`` ends with examples (:func:`examples`).
"""

from __future__ import annotations

from collections.abc import Iterable

# the metavar of a name-list flag, so that help shows "NAME[,NAME...]" rather than list[str]
NAMES = "NAME[,NAME...]"


def examples(block: str) -> str:
    """A ``--help`` epilog from a block of example command lines, one a line (indentation and
    blank lines around them dropped), each kept as written (click's ``\\b``)."""
    lines = [line.strip() for line in block.strip().splitlines()]
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


def split_names(values: Iterable[str] | str | None, flag: str) -> list[str]:
    """``--tasks a,b --tasks c`` -> ``[a, b, c]`` (order kept, repeats dropped); an empty
    name (``a,,b`` or a trailing comma) is an error naming the flag."""
    from dapo_bench.errors import UserError

    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        for name in value.split(","):
            name = name.strip()
            if not name:
                raise UserError(f"{flag} {value!r}: empty name (expected {NAMES})")
            out.append(name)
    return list(dict.fromkeys(out))


def quiet_accelerator_probe() -> None:
    """On a machine without CUDA, tell DeepSpeed (when installed, transformers imports it) that
    the accelerator is the CPU: its own probe concludes the same but prints a WARNING line to
    stdout, into the middle of a command's output. A GPU machine, or a DS_ACCELERATOR the user
    set, is left alone."""
    import os

    import torch

    if "DS_ACCELERATOR" not in os.environ and not torch.cuda.is_available():
        os.environ["DS_ACCELERATOR"] = "cpu"
