"""Leaderboard specs: ``leaderboards/<name>.yaml`` parsed into frozen dataclasses.

A spec says which result files to read (``inputs``: globs under a runs directory, or named
files), which tables to build (rows x columns, with a base row or base column for deltas) and
which plots to draw. A row is either *measured* (``match``: the result file whose fields equal
the given values) or *published* (``values``: numbers copied from a paper, in percent), so a
table can show a reproduction beside the published numbers. ``reference`` imports published
rows from another spec (e.g. ``paper.yaml``) with a column mapping.

Every path in a spec is relative to the spec file's directory; ``--runs`` overrides
``inputs.dir``. A malformed spec raises UserError naming the file and the field. This module
only parses and checks specs; it reads no result files (see ``runs``) and renders nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dapo_bench.config import load_config
from dapo_bench.errors import UserError


@dataclass(frozen=True)
class Inputs:
    """Where result files come from. ``globs`` are relative to ``dir`` (itself relative to the
    spec file); ``files`` are named files, relative to ``dir`` as well. A bad or partial file
    found by a glob is skipped with a warning (``on_bad_glob: skip``) or is an error; a bad
    named file is an error unless ``on_bad_file: skip``."""

    dir: str = "../runs"
    globs: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    on_bad_glob: Literal["skip", "error"] = "skip"
    on_bad_file: Literal["skip", "error"] = "error"


@dataclass(frozen=True)
class Row:
    """One table row. ``match`` selects a result file by dotted fields (``method``,
    ``model.name``, ``config.beta``, ``iteration``; a list value means any of); ``values``
    gives published numbers in percent per column id instead, with optional ``stderr`` and the
    printed ``deltas`` (shown as printed; a mismatch with the computed delta is reported).
    ``delta_to`` names the row this row's deltas are taken against (default: the table's base
    row). ``group`` starts a section (e.g. "RL Models")."""

    id: str = ""
    label: str = ""
    match: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)
    stderr: dict = field(default_factory=dict)
    deltas: dict = field(default_factory=dict)
    n: dict = field(default_factory=dict)
    base: bool = False
    delta_to: str | None = None
    group: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Column:
    """A table column: a task metric (``task`` + ``metric``, a fraction rendered in percent
    with its stderr and n), an ``average`` of other column ids, a ``gain`` (a task name: the
    paired-bootstrap gain over its reference on that task, in points with its stderr: the
    final policy's, ``comparison.final_vs_reference``, or in an ``evaluated: control`` row
    ``control_vs_reference``; none in an ``evaluated: reference`` or an iteration row), or a
    raw ``field`` of the result file (e.g. ``ledger.flops``; ``format``: ``sci``, ``int`` or a format string).
    ``best`` picks the bold cell (``max``/``min``/``none``; default ``max`` for percentages,
    ``none`` for fields). ``group`` is a header spanning consecutive columns (LaTeX only)."""

    id: str
    label: str = ""
    task: str | None = None
    metric: str = "acc"
    average: list[str] = field(default_factory=list)
    gain: str | None = None
    field: str | None = None
    format: str | None = None
    best: Literal["max", "min", "none"] | None = None
    group: str | None = None


@dataclass(frozen=True)
class Reference:
    """Published rows imported from another spec's table: ``rows`` (ids there; all when
    empty), ``columns`` maps this table's column id to the other table's column id; the rows
    form one section, titled ``group``."""

    spec: str
    table: str
    rows: list[str] = field(default_factory=list)
    columns: dict = field(default_factory=dict)
    label_suffix: str = " (published)"
    group: str | None = None


@dataclass(frozen=True)
class Table:
    """A table. Rows are listed, then generated with ``row_by`` (one row per distinct value
    of a dotted field among the runs that ``row_match`` selects, labelled ``row_label``).
    ``delta: row`` takes deltas against the base row (or each row's ``delta_to``);
    ``delta: column`` against ``base_column`` in the same row (the paper's Table 3 layout).
    ``pick`` resolves several files matching one row: ``error`` (default), ``last``
    (greatest run_id, then path) or ``by_task`` (each column from the one file that has it,
    for a model evaluated in several runs; a column in two files is an error). ``seeds:
    true`` instead aggregates every file a row matches (one per seed, ``leaderboard.seeds``):
    the mean over seeds ± the standard error of that mean, and a note per row with each
    seed's paired gains."""

    id: str
    title: str = ""
    caption: str = ""
    rows: list[Row] = field(default_factory=list)
    row_by: str | None = None
    row_match: dict = field(default_factory=dict)
    row_label: str = "{value}"
    columns: list[Column] = field(default_factory=list)
    delta: Literal["row", "column", "none"] = "row"
    base_column: str | None = None
    decimals: int = 1
    bold: bool = True
    pick: Literal["error", "last", "by_task"] = "error"
    seeds: bool = False
    reference: list[Reference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Plot:
    """A PNG plot. ``kind``: ``acc_vs_flops`` (one point per run, x = ledger FLOPs),
    ``training_curves`` (``history`` metric vs step per run), ``beta_ablation`` (metric vs
    ``field``, default ``config.beta``, with the ``base_match`` run as a line),
    ``calibration`` (reliability diagram from ``field``, default ``critic.heldout|critic``)."""

    id: str
    kind: Literal["acc_vs_flops", "training_curves", "beta_ablation", "calibration"]
    title: str = ""
    task: str | None = None
    metric: str = "acc"
    match: dict = field(default_factory=dict)
    base_match: dict = field(default_factory=dict)
    field: str | None = None
    label_by: str = "method"


@dataclass(frozen=True)
class Spec:
    name: str = ""
    title: str = ""
    description: str = ""
    source: dict = field(default_factory=dict)
    inputs: Inputs | None = None
    tables: list[Table] = field(default_factory=list)
    plots: list[Plot] = field(default_factory=list)
    commands: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    path: str = ""


def load_spec(path: str | Path) -> Spec:
    """Parse and check ``path``; every error names the file and the field."""
    p = Path(path)
    try:
        spec = load_config(Spec, p)
    except UserError as e:
        msg = str(e)
        raise UserError(msg if msg.startswith(str(p)) else f"{p}: {msg}") from None
    spec = _with(spec, name=spec.name or p.stem, path=str(p))
    _check(spec, p)
    return spec


def _with(obj: Any, **kw: Any) -> Any:
    return dataclasses.replace(obj, **kw)


def _check(spec: Spec, p: Path) -> None:
    seen_tables: set[str] = set()
    for ti, t in enumerate(spec.tables):
        where = f"{p}: tables[{ti}] ({t.id})"
        if t.id in seen_tables:
            raise UserError(f"{where}: duplicate table id")
        seen_tables.add(t.id)
        if not t.columns:
            raise UserError(f"{where}: no columns")
        col_ids = [c.id for c in t.columns]
        if len(set(col_ids)) != len(col_ids):
            raise UserError(f"{where}: duplicate column ids {col_ids}")
        for ci, c in enumerate(t.columns):
            kinds = sum((c.task is not None, bool(c.average), c.field is not None,
                         c.gain is not None))
            if kinds > 1:
                raise UserError(f"{where}.columns[{ci}]: give one of task, average, gain, field")
            for a in c.average:
                if a not in col_ids or a == c.id:
                    raise UserError(f"{where}.columns[{ci}].average: unknown column {a!r}")
        if t.delta == "column" and t.base_column not in col_ids:
            raise UserError(f"{where}: delta: column needs base_column, one of {col_ids}")
        row_ids = [r.id for r in t.rows]
        if len([i for i in row_ids if i]) != len({i for i in row_ids if i}):
            raise UserError(f"{where}: duplicate row ids")
        if sum(r.base for r in t.rows) > 1:
            raise UserError(f"{where}: more than one base row")
        for ri, r in enumerate(t.rows):
            rw = f"{where}.rows[{ri}]"
            if bool(r.match) == bool(r.values):
                raise UserError(f"{rw}: give exactly one of match (measured) or values (published)")
            for key in (*r.values, *r.stderr, *r.deltas, *r.n):
                if key not in col_ids:
                    raise UserError(f"{rw}: unknown column {key!r} (columns: {col_ids})")
            if r.delta_to is not None and r.delta_to not in row_ids:
                raise UserError(f"{rw}.delta_to: unknown row {r.delta_to!r}")
            for key, v in r.values.items():
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    raise UserError(f"{rw}.values.{key}: expected a number, got {v!r}")
        for ri, ref in enumerate(t.reference):
            for mine in ref.columns:
                if mine not in col_ids:
                    raise UserError(f"{where}.reference[{ri}].columns: unknown column {mine!r}")
    plot_ids = [pl.id for pl in spec.plots]
    if len(set(plot_ids)) != len(plot_ids):
        raise UserError(f"{p}: duplicate plot ids {plot_ids}")
    for pi, pl in enumerate(spec.plots):
        if pl.kind in ("acc_vs_flops", "beta_ablation") and not pl.task:
            raise UserError(f"{p}: plots[{pi}] ({pl.id}): kind {pl.kind} needs a task")


def resolve(spec: Spec, rel: str) -> Path:
    """A path of the spec, relative to the spec file's directory."""
    return (Path(spec.path).parent / rel).resolve()
