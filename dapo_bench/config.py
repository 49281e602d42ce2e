"""Frozen dataclass configs filled from a YAML file and dotted command-line overrides.

    cfg = load_config(DapoConfig, yaml_path="my.yaml", overrides=["critic.lr=1e-5", "beta=0.02"])

Unknown keys and values of the wrong type raise UserError naming the file or override and the
field. ``to_dict`` gives the resolved config that every run saves beside its artifacts.

Command-line options are declared the same way, once: a frozen dataclass whose fields are made
with :func:`option` (a default and its help) is a command's flags (``commands.common``
makes them) and a docs table (:func:`options_table`); every command's flags are such classes
(``methods.options.RunOptions`` for train, ``commands.eval.EvalOptions`` and
``generation.openai_options.ServedOptions`` for eval, ``ServeOptions``, ``VerifyOptions`` ...
beside the other commands).
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

from dapo_bench.errors import UserError
from dapo_bench.io import read_yaml_mapping

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

C = TypeVar("C", bound="DataclassInstance")


def option(default: Any, help: str, *, metavar: str | None = None,
           flag: str | None = None) -> Any:
    """A dataclass field that is a command-line flag: ``--`` and the field's name with dashes
    (:func:`flag`), or *flag* where the name cannot say it (``as_json`` is ``--json``), this
    help and metavar, the field's default. A ``bool`` field is a ``--x/--no-x`` switch; a
    ``tuple[str, ...]`` field a name list (comma-separated or repeated)."""
    return dataclasses.field(default=default,
                             metadata={"help": help, "metavar": metavar, "flag": flag})


def flag(name: str) -> str:
    """A field's flag: ``eval_max_new_tokens`` -> ``--eval-max-new-tokens``."""
    return "--" + name.replace("_", "-")


def field_flag(f: dataclasses.Field) -> str:
    """The flag of a field declared with :func:`option`: its own (``flag=``), else
    :func:`flag` of its name."""
    return f.metadata.get("flag") or flag(f.name)


def field_switch(f: dataclasses.Field, tp: Any) -> str:
    """How the flag of a field of type *tp* is declared: :func:`field_flag`, and for a ``bool``
    its ``--no-`` twin as well (``--json/--no-json``)."""
    name = field_flag(f)
    return f"{name}/--no-{name[2:]}" if tp is bool else name


def options_table(cls: type) -> str:
    """A docs table (markdown: flag, default, meaning) of the flags of *cls*, a dataclass whose
    fields are declared with :func:`option`."""
    hints = typing.get_type_hints(cls)
    rows = ["| flag | default | meaning |", "|---|---|---|"]

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    for f in dataclasses.fields(cls):
        name = field_switch(f, hints[f.name])
        if hints[f.name] is not bool and f.metadata.get("metavar"):
            name = f"{name} {f.metadata['metavar']}"
        default = "-" if f.default in (None, ()) else f"`{f.default}`"
        rows.append(f"| `{cell(name)}` | {default} | {cell(f.metadata['help'])} |")
    return "\n".join(rows) + "\n"


def to_dict(cfg: Any) -> dict:
    return dataclasses.asdict(cfg)


def _coerce(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(value, a, where)
            except UserError as e:
                errors.append(str(e))
        raise UserError(errors[0] if errors else f"{where}: bad value {value!r}")
    if dataclasses.is_dataclass(tp):
        cls = typing.cast("type[DataclassInstance]", tp)  # a type hint: a class, not an instance
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise UserError(f"{where}: expected a mapping, got {value!r}")
        return _build(cls, value, where)
    if origin in (list, tuple):
        if isinstance(value, str):
            value = [v for v in value.split(",") if v]
        if not isinstance(value, (list, tuple)):
            raise UserError(f"{where}: expected a list, got {value!r}")
        inner = args[0] if args else Any
        items = [_coerce(v, inner, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise UserError(f"{where}: expected a mapping, got {value!r}")
        return dict(value)
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise UserError(f"{where}: expected true/false, got {value!r}")
    if tp is int:
        if isinstance(value, bool):
            raise UserError(f"{where}: expected an integer, got {value!r}")
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise UserError(f"{where}: expected an integer, got {value!r}") from None
        if f != int(f):
            raise UserError(f"{where}: expected an integer, got {value!r}")
        return int(f)
    if tp is float:
        if isinstance(value, bool):
            raise UserError(f"{where}: expected a number, got {value!r}")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise UserError(f"{where}: expected a number, got {value!r}") from None
    if tp is str:
        if isinstance(value, (dict, list)):
            raise UserError(f"{where}: expected a string, got {value!r}")
        return str(value)
    if origin is typing.Literal:
        if value not in args:
            raise UserError(f"{where}: expected one of {list(args)}, got {value!r}")
        return value
    return value


def _build(cls: type[C], data: dict, where: str) -> C:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in data.items():
        if key not in fields:
            prefix = f"{where}: " if where else ""
            raise UserError(f"{prefix}unknown field {key!r} (fields: {', '.join(fields)})")
        kwargs[key] = _coerce(value, hints[key], f"{where}.{key}" if where else key)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise UserError(f"{where or cls.__name__}: {e}") from None


def _set_dotted(data: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = data
    for p in parts[:-1]:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise UserError(f"override {dotted!r}: {p!r} is not a mapping")
    node[parts[-1]] = value


def load_config(
    cls: type[C],
    yaml_path: str | Path | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    base: dict | None = None,
) -> C:
    """Build ``cls`` from ``base`` (e.g. a preset), then a YAML file, then ``key.sub=value``."""
    data: dict = copy.deepcopy(dict(base or {}))  # never mutate a caller's preset
    if yaml_path is not None:
        p = Path(yaml_path)
        if not p.is_file():
            raise UserError(f"{p}: no such config file")
        loaded = read_yaml_mapping(p)
        _deep_update(data, loaded)
    for ov in overrides:
        if "=" not in ov:
            raise UserError(f"override {ov!r}: expected key=value")
        key, raw = ov.split("=", 1)
        _set_dotted(data, key.strip(), yaml.safe_load(raw) if raw else "")
    return _build(cls, data, "")


def _deep_update(dst: dict, src: dict) -> None:
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _deep_update(dst[k], v)
        else:
            dst[k] = v
