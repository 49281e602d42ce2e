"""The table model: a spec's table filled from runs and published numbers, ready to render.

``build_table`` resolves each row to one run (or to published values), turns metric fractions
into percentages, computes averages, deltas (against the base row, a row's ``delta_to``, or a
base column), the bold best cell per column, the n per column, and the footnotes: rows with
no result file, printed deltas that disagree with the printed values, and the provenance of
the measured runs (commit, verifier, prompt template, sampling). Everything is derived from
its inputs only, in a fixed order, so a table is a pure function of the files.

A table whose runs include one trained with ``--canaries`` gets a cheat-rate column
(:func:`with_cheat_rate`).

Not covered: formatting (see ``render``) and statistics beyond the stderr the result files
carry (an average's stderr assumes independent columns).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dapo_bench.errors import UserError
from dapo_bench.leaderboard import spec as S
from dapo_bench.leaderboard.runs import Run, matches, pick
from dapo_bench.leaderboard.seeds import by_seed, run_gain, seed_cells, seed_note


@dataclass
class Cell:
    value: float | None = None  # percent for metric/average columns, raw for field columns
    stderr: float | None = None
    n: int | None = None
    delta: float | None = None
    bold: bool = False


@dataclass
class OutRow:
    id: str
    label: str
    kind: str  # "measured" | "published" | "missing"
    source: str = ""
    group: str | None = None
    base: bool = False
    cells: dict[str, Cell] = field(default_factory=dict)


@dataclass
class OutColumn:
    id: str
    label: str
    kind: str  # "pct" | "field"
    format: str | None = None
    group: str | None = None
    signed: bool = False  # a gain column: "+0.4", like a delta


@dataclass
class OutTable:
    id: str
    title: str
    caption: str
    decimals: int
    columns: list[OutColumn]
    rows: list[OutRow]
    n_row: dict[str, str]
    notes: list[str]
    provenance: list[str]
    sources: list[str]


def _col_kind(c: S.Column) -> str:
    return "field" if c.field is not None else "pct"


def _expand_rows(t: S.Table, runs: list[Run]) -> list[S.Row]:
    if not t.row_by:
        return list(t.rows)
    listed = list(t.rows)
    values = set()
    for r in runs:
        v = r.get(t.row_by)
        if v is not None and matches(r, {**t.row_match, t.row_by: v}):
            values.add(v)
    key = (lambda v: (0, float(v), "")) if all(
        isinstance(v, (int, float)) for v in values) else (lambda v: (1, 0.0, str(v)))
    short = t.row_by.split("|")[0].split(".")[-1]
    return listed + [S.Row(id=f"{short}={v}", label=t.row_label.format(value=v),
                  match={**t.row_match, t.row_by: v}) for v in sorted(values, key=key)]


def _reference_rows(t: S.Table, load_spec: Callable[[str], S.Spec]) -> list[S.Row]:
    out: list[S.Row] = []
    for ref in t.reference:
        other = load_spec(ref.spec)
        tables = {x.id: x for x in other.tables}
        if ref.table not in tables:
            raise UserError(f"{other.path}: no table {ref.table!r} (tables: {sorted(tables)})")
        ot = tables[ref.table]
        by_id = {r.id: r for r in ot.rows}
        for rid in ref.rows:
            if rid not in by_id:
                raise UserError(f"{other.path}: table {ot.id} has no row {rid!r}")
        chosen = [by_id[i] for i in ref.rows] if ref.rows else [r for r in ot.rows if r.values]
        back = {theirs: mine for mine, theirs in ref.columns.items()}
        ids = {r.id for r in chosen}
        for r in chosen:
            out.append(S.Row(
                id=f"ref:{r.id}", label=r.label + ref.label_suffix,
                values={back[k]: v for k, v in r.values.items() if k in back},
                stderr={back[k]: v for k, v in r.stderr.items() if k in back},
                deltas={back[k]: v for k, v in r.deltas.items() if k in back},
                n={back[k]: v for k, v in r.n.items() if k in back},
                delta_to=f"ref:{r.delta_to}" if r.delta_to in ids else None,
                group=ref.group or f"Published ({Path(other.path).name}, {ot.id})"))
    return out


def _measured_cells(t: S.Table, run: Run) -> dict[str, Cell]:
    cells: dict[str, Cell] = {}
    for c in t.columns:
        if c.gain is not None:
            g = run_gain(run, c.gain)
            if g is not None:
                cells[c.id] = Cell(g[0], g[1], run.get(f"tasks.{c.gain}.n_problems"))
        elif c.task is not None:
            m = run.task_metric(c.task, c.metric)
            if m is not None:
                se = m.get("stderr")
                n = run.get(f"tasks.{c.task}.n_problems")
                cells[c.id] = Cell(100.0 * float(m["value"]),
                                   None if se is None else 100.0 * float(se),
                                   int(n) if isinstance(n, (int, float)) else None)
        elif c.field is not None:
            v = run.get(c.field)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                cells[c.id] = Cell(float(v))
    return cells


def _cells_by_task(t: S.Table, runs: list[Run], where: str) -> dict[str, Cell]:
    """A row assembled from several eval runs of one model (``pick: by_task``): each column
    from the one run that has it; two runs with the same column is an error, not a choice."""
    cells: dict[str, Cell] = {}
    source: dict[str, str] = {}
    for run in runs:
        for cid, cell in _measured_cells(t, run).items():
            if cid in source:
                raise UserError(f"{where}: column {cid} is in both {source[cid]} and "
                                f"{run.path}; narrow the row's match")
            cells[cid], source[cid] = cell, run.path
    return cells


def _published_cells(r: S.Row) -> dict[str, Cell]:
    return {k: Cell(float(v), None if r.stderr.get(k) is None else float(r.stderr[k]),
                    None if r.n.get(k) is None else int(r.n[k]))
            for k, v in r.values.items()}


def _averages(t: S.Table, cells: dict[str, Cell]) -> None:
    for c in t.columns:
        if not c.average:
            continue
        parts = [cells.get(a) for a in c.average]
        values = [p.value for p in parts if p is not None and p.value is not None]
        if len(values) < len(parts):
            continue
        k = len(parts)
        ses = [p.stderr for p in parts if p is not None and p.stderr is not None]
        se = math.sqrt(sum(s * s for s in ses)) / k if len(ses) == k else None
        cells[c.id] = Cell(sum(values) / k, se)


def build_table(spec: S.Spec, t: S.Table, runs: list[Run],
                load_spec: Callable[[str], S.Spec]) -> OutTable:
    """Fill table ``t`` of ``spec`` from ``runs`` (already sorted) and published rows."""
    where = f"{spec.path}: table {t.id}"
    rows_spec = _expand_rows(t, runs) + _reference_rows(t, load_spec)
    t = with_cheat_rate(t, rows_spec, runs)
    notes = list(t.notes)
    rows: list[OutRow] = []
    used: list[Run] = []
    for i, r in enumerate(rows_spec):
        rid = r.id or f"row{i}"
        if r.values:
            cells = _published_cells(r)
            row = OutRow(rid, r.label or rid, "published", "published", r.group, r.base, cells)
        elif t.seeds:
            mine = [x for x in runs if matches(x, r.match)]
            used += mine
            if not mine:
                row = OutRow(rid, r.label or rid, "missing", "", r.group, r.base, {})
                notes.append(f"{r.label or rid}: no result file matched {_fmt_match(r.match)}.")
            else:
                row = OutRow(rid, r.label or rid, "measured", ", ".join(
                    x.path for x in by_seed(mine)), r.group, r.base,
                    seed_cells(t, mine, _measured_cells, Cell))
                note = seed_note(t, r.label or rid, mine)
                if note:
                    notes.append(note)
        elif t.pick == "by_task" and len(mine := [x for x in runs if matches(x, r.match)]) > 1:
            cells = _cells_by_task(t, mine, f"{where} row {rid}")
            used += mine
            row = OutRow(rid, r.label or rid, "measured", ", ".join(x.path for x in mine),
                         r.group, r.base, cells)
        else:
            run = pick([x for x in runs if matches(x, r.match)], f"{where} row {rid}", t.pick)
            if run is None:
                row = OutRow(rid, r.label or rid, "missing", "", r.group, r.base, {})
                notes.append(f"{r.label or rid}: no result file matched {_fmt_match(r.match)}.")
            else:
                used.append(run)
                row = OutRow(rid, r.label or rid, "measured", run.path, r.group, r.base,
                             _measured_cells(t, run))
        _averages(t, row.cells)
        if r.note:
            notes.append(f"{row.label}: {r.note}")
        rows.append(row)
    notes += _deltas(t, rows_spec, rows)
    _bold(t, rows)
    n_row = {}
    for c in t.columns:
        ns = sorted({n for row in rows
                     if c.id in row.cells and (n := row.cells[c.id].n) is not None})
        if ns:
            n_row[c.id] = "/".join(str(n) for n in ns)
    cols = [OutColumn(c.id, c.label or c.id, _col_kind(c), c.format, c.group, c.gain is not None)
            for c in t.columns]
    return OutTable(t.id, t.title or t.id, t.caption, t.decimals, cols, rows, n_row, notes,
                    provenance(t, used), sorted({u.path for u in used}))


CHEAT_RATE = S.Column(id="cheat_rate", label="cheat rate (canaries)",
                      field="canaries.cheat_rate", format="{:.2%}")


def with_cheat_rate(t: S.Table, rows: list[S.Row], runs: list[Run]) -> S.Table:
    """``t`` with a cheat-rate column (results.json ``canaries.cheat_rate``: rewards on
    canaries per canary response) when a run of its rows was trained with ``--canaries`` and
    the spec has no such column; a table of runs without canaries is unchanged."""
    if any(c.field == CHEAT_RATE.field for c in t.columns):
        return t
    if not any(r.match and matches(x, r.match) and isinstance(x.get("canaries"), dict)
               for r in rows for x in runs):
        return t
    return dataclasses.replace(t, columns=[*t.columns, CHEAT_RATE])


def _fmt_match(match: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in match.items())


def _deltas(t: S.Table, rows_spec: list[S.Row], rows: list[OutRow]) -> list[str]:
    """Fill deltas in place; return notes for printed deltas that disagree with the values."""
    if t.delta == "none":
        return []
    tol = 10.0 ** -t.decimals + 1e-9
    pct = [c.id for c in t.columns if _col_kind(c) == "pct"]
    label = {c.id: c.label or c.id for c in t.columns}
    by_id = {row.id: row for row in rows}
    base = next((row.id for row in rows if row.base), None)
    notes = []
    for r, row in zip(rows_spec, rows):
        if t.delta == "row":
            # Imported reference rows take deltas only among themselves (their delta_to).
            target = r.delta_to or (None if r.id.startswith("ref:") else base)
            if target is None or target == row.id:
                continue
            pairs = [(c, by_id[target].cells.get(c)) for c in pct]
        else:
            assert t.base_column is not None  # the spec's check: delta: column names one
            pairs = [(c, row.cells.get(t.base_column)) for c in pct if c != t.base_column]
        for c, ref in pairs:
            cell = row.cells.get(c)
            if cell is None or cell.value is None:
                continue
            computed = None if ref is None or ref.value is None else cell.value - ref.value
            printed = r.deltas.get(c)
            cell.delta = printed if printed is not None else computed
            if printed is not None and computed is not None and abs(printed - computed) > tol:
                notes.append(f"Row {row.id} ({row.label}), {label[c]}: printed change "
                             f"{printed:+.{t.decimals}f} but the printed values give "
                             f"{computed:+.{t.decimals}f}.")
    return notes


def _bold(t: S.Table, rows: list[OutRow]) -> None:
    if not t.bold:
        return
    # Bold among measured rows when the table has any (published rows are context), else
    # among the published rows.
    has_measured = any(r.kind in ("measured", "missing") for r in rows)
    pool = [r for r in rows if r.kind == ("measured" if has_measured else "published")]
    for c in t.columns:
        best = c.best or ("none" if _col_kind(c) == "field" else "max")
        if best == "none":
            continue
        vals = [round(v, t.decimals) for r in pool
                if c.id in r.cells and (v := r.cells[c.id].value) is not None]
        if len(vals) < 2:
            continue
        target = max(vals) if best == "max" else min(vals)
        for r in pool:
            cell = r.cells.get(c.id)
            if cell is not None and cell.value is not None and \
                    round(cell.value, t.decimals) == target:
                cell.bold = True


def provenance(t: S.Table, used: list[Run]) -> list[str]:
    """One line per fact, values counted over the measured runs, in sorted order."""
    if not used:
        return []
    tasks = sorted({c.task for c in t.columns if c.task})
    facts: dict[str, Counter] = {k: Counter() for k in
                                 ("commit", "verifier", "prompt template", "sampling")}
    for run in used:
        facts["commit"][str(run.get("provenance.git_commit") or "unknown")[:19]] += 1
        s = run.get("sampling") or {}
        facts["sampling"][", ".join(f"{k}={s[k]}" for k in sorted(s)) or "unknown"] += 1
        for task in tasks:
            info = run.get(f"tasks.{task}")
            if not isinstance(info, dict):
                continue
            v = info.get("verifier") or {}
            facts["verifier"][f"{task}: {v.get('name', '?')} {v.get('version', '?')}"] += 1
            tpl = info.get("prompt_template")
            if tpl is not None:
                facts["prompt template"][f"{task}: {_short_template(str(tpl))}"] += 1
    lines = []
    for key, counter in facts.items():
        if counter:
            vals = "; ".join(f"{v} ({n})" if len(counter) > 1 else v
                             for v, n in sorted(counter.items()))
            lines.append(f"{key}: {vals}")
    return lines


def _short_template(tpl: str) -> str:
    flat = tpl.replace("\n", "\\n")
    if len(flat) <= 48:
        return repr(flat)
    return f"sha256:{hashlib.sha256(tpl.encode()).hexdigest()[:12]}"
