"""Conventions every sub-command follows (tests/commands/test_cli.py checks them on the built CLI).

- Long flags only, spelled as in lm-evaluation-harness / vLLM / TRL (``--model``, ``--tasks``,
  ``--limit``, ``--max-new-tokens``); the one short flag is ``-h``.
- Lists are comma-separated and the flag may be repeated (``--tasks a,b`` == ``--tasks a
  --tasks b``), parsed by :func:`split_names` wherever a flag takes names.
- Train's evaluation flags are eval's with an ``eval-`` prefix and the same meaning
  (``--eval-tasks``, ``--eval-limit``, ``--eval-max-new-tokens``).
- Booleans are ``--x/--no-x`` switches; every ``--help`` ends with examples (:func:`examples`).
- Every option is declared once, a dataclass field (``config.option``) written nowhere else:
  train's ``RunOptions`` (and its methods' config fields), eval's ``EvalOptions`` and
  ``ServedOptions``, ``ServeOptions``, ``VerifyOptions``, ``LeaderboardOptions``,
  ``AuditOptions`` and ``SandboxCheckOptions`` (beside their commands). :func:`with_options`
  makes a command's flags from the fields, :func:`options_of` the object from the flags'
  values, ``config.options_table`` the docs table; only positional arguments (``FILE.jsonl``,
  ``SPEC.yaml``, ``RUN_DIR``) and train's ``--method``, ``--config``, ``--preset`` and
  ``--set`` are typer parameters of their own (tests/commands/test_command_options.py fails
  on any other flag written by hand). A field whose name cannot be its flag names it:
  ``option(False, ..., flag="--json")``.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Iterable
from typing import Annotated, Any

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


def option_parameters(cls: type) -> list[inspect.Parameter]:
    """The flags of the fields of *cls* (a dataclass declared with ``config.option``), as
    keyword-only parameters: the field's flag (``config.field_flag``), help, metavar and
    default; a ``bool`` is a ``--x/--no-x`` switch, a ``tuple[str, ...]`` takes names,
    comma-separated or repeated."""
    import typer

    from dapo_bench.config import field_switch

    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        tp, default = hints[f.name], f.default
        if tp == tuple[str, ...]:
            tp, default = list[str] | None, None
        name = field_switch(f, tp)
        info = typer.Option(name, help=f.metadata["help"], metavar=f.metadata.get("metavar"))
        out.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                     annotation=Annotated[tp, info]))
    return out


def with_options(command: Callable[..., Any], *classes: type) -> Callable[..., Any]:
    """*command* (whose ``**kwargs`` take them) with the flags of *classes*' fields after its
    own parameters (:func:`option_parameters`), for typer to read."""
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values()
           if p.kind is not inspect.Parameter.VAR_KEYWORD]
    command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [*own, *(p for cls in classes for p in option_parameters(cls))])
    return command


def options_of(cls: type, values: dict[str, Any]) -> Any:
    """The *cls* object of its flags' values, by field name (name lists split, deduplicated)."""
    from dapo_bench.config import field_flag

    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    return cls(**{
        name: tuple(split_names(v, field_flag(fields[name]))) if hints[name] == tuple[str, ...]
        else v for name, v in values.items()})
