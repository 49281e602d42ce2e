"""Text renderers of a leaderboard: Markdown, LaTeX (booktabs) and CSV, one registry.

Each renderer takes a ``Page`` (the spec, its built tables, the plot files, the skipped
result files) and returns the whole file as a string. Cells show ``value ± stderr`` in
percent with the table's decimals, the delta to the base in parentheses, the best cell per
column in bold, published rows in italics, an ``n`` row, and footnotes (notes, provenance,
sources). No clock, no absolute path, no locale: the same Page gives the same bytes.

The CSV is long-format (one line per row x column) so that tools can read it without
knowing the table layouts. LaTeX needs ``\\usepackage{booktabs}``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field

from dapo_bench.leaderboard.spec import Spec
from dapo_bench.leaderboard.table import Cell, OutColumn, OutRow, OutTable
from dapo_bench.registry import Registry

RENDERERS: Registry[Callable[[Page], str]] = Registry("leaderboard format")


@dataclass
class Page:
    spec: Spec
    spec_rel: str  # the spec's path as shown in outputs (relative to the output dir)
    tables: list[OutTable]
    plots: list[tuple[str, str]] = field(default_factory=list)  # (title, file name)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)


# ---------------------------------------------------------------- numbers


def fmt_number(v: float, d: int) -> str:
    s = f"{v:.{d}f}"
    return s.lstrip("-") if float(s) == 0 else s  # never print "-0.0"


def fmt_delta(v: float, d: int) -> str:
    s = f"{v:+.{d}f}"
    return "+" + s[1:] if float(s) == 0 else s  # "+0.0", never "-0.0"


def fmt_field(v: float, fmt: str | None) -> str:
    if fmt == "sci":
        return f"{v:.2e}"
    if fmt == "int":
        return str(round(v))
    if fmt:
        return fmt.format(v)
    return f"{v:.4g}"


def _parts(cell: Cell, col: OutColumn, d: int) -> tuple[str, str, str]:
    """(value, '± se', '(+delta)') as plain text; empty strings where absent."""
    if cell.value is None:
        return "", "", ""
    if col.kind == "field":
        return fmt_field(cell.value, col.format), "", ""
    se = "" if cell.stderr is None else fmt_number(cell.stderr, d)
    delta = "" if cell.delta is None else f"({fmt_delta(cell.delta, d)})"
    return (fmt_delta if col.signed else fmt_number)(cell.value, d), se, delta


def _italic(t: OutTable, r: OutRow) -> bool:
    """Published rows are set in italics when the table also has measured rows."""
    return r.kind == "published" and any(x.kind != "published" for x in t.rows)


def legend(t: OutTable) -> str:
    """What the cells show, stating only what this table actually has."""
    cells = [c for r in t.rows for c in r.cells.values()]
    parts = ["Values in percent" + (" ± standard error" if any(
        c.stderr is not None for c in cells) else "")]
    if any(c.delta is not None for c in cells):
        parts.append("(change to the base) in parentheses")
    if any(c.bold for c in cells):
        parts.append("best per column in bold")
    if any(_italic(t, r) for r in t.rows):
        parts.append("published numbers in italics")
    return "; ".join(parts) + "."


# ---------------------------------------------------------------- markdown


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|")


def _md_cell(cell: Cell | None, col: OutColumn, d: int) -> str:
    if cell is None or cell.value is None:
        return "–"
    v, se, delta = _parts(cell, col, d)
    return _styled(v, se, delta, cell.bold, ("**{}**", " ± {}", " {}"))


def _styled(v: str, se: str, delta: str, bold: bool, fmt: tuple[str, str, str]) -> str:
    """A cell's value, bold or not, then its stderr and its delta where present, each in a
    format's own markup (``fmt``: bold, stderr and delta templates)."""
    out = fmt[0].format(v) if bold else v
    if se:
        out += fmt[1].format(se)
    if delta:
        out += fmt[2].format(delta)
    return out


def _md_table(t: OutTable) -> list[str]:
    out = [f"## {t.title}", ""]
    if t.caption:
        out += [t.caption.strip(), ""]
    head = ["Row", *(_md_escape(c.label) for c in t.columns)]
    out.append("| " + " | ".join(head) + " |")
    out.append("|:--" + "|--:" * len(t.columns) + "|")
    group = None
    for r in t.rows:
        if r.group != group and r.group:
            out.append(f"| ***{_md_escape(r.group)}*** |" + " |" * len(t.columns))
        group = r.group
        label = _md_escape(r.label)
        label = f"*{label}*" if _italic(t, r) else label
        cells = [_md_cell(r.cells.get(c.id), c, t.decimals) for c in t.columns]
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    if t.n_row:
        out.append("| n | " + " | ".join(t.n_row.get(c.id, "") for c in t.columns) + " |")
    out.append("")
    foot = [legend(t)] if any(c.kind == "pct" for c in t.columns) else []
    foot += t.notes
    foot += [f"Provenance: {line}." for line in t.provenance]
    if t.sources:
        foot.append("Result files: " + ", ".join(f"`{s}`" for s in t.sources) + ".")
    out += [f"- {line}" for line in foot]
    if foot:
        out.append("")
    return out


@RENDERERS.register("md", help="Markdown (GitHub tables)")
def render_md(page: Page) -> str:
    spec = page.spec
    out = [f"# {spec.title or spec.name}", "",
           f"<!-- Generated by `dapo-bench leaderboard {page.spec_rel}`; do not edit. -->", ""]
    if spec.description:
        out += [spec.description.strip(), ""]
    for t in page.tables:
        out += _md_table(t)
    if page.plots:
        out += ["## Plots", ""]
        out += [f"- [{title}]({name})" for title, name in page.plots]
        out.append("")
    if page.skipped:
        out += ["## Skipped result files", ""]
        out += [f"- `{p}`: {why}" for p, why in page.skipped]
        out.append("")
    if spec.notes:
        out += ["## Notes", ""] + [f"- {n.strip()}" for n in spec.notes] + [""]
    if spec.commands:
        out += ["## Commands", ""]
        for what, cmd in spec.commands.items():
            out += [f"{what}:", "", "```bash", str(cmd).strip(), "```", ""]
    return "\n".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------- latex

_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                "^": r"\textasciicircum{}", "β": r"$\beta$", "±": r"$\pm$", "→": r"$\to$",
                "–": "--", "—": "---", "×": r"$\times$", "≈": r"$\approx$", "`": ""}


def tex_escape(s: str) -> str:
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in s)


def _tex_cell(cell: Cell | None, col: OutColumn, d: int) -> str:
    if cell is None or cell.value is None:
        return "--"
    v, se, delta = _parts(cell, col, d)
    if col.kind == "field" and col.format == "sci":
        mant, exp = v.split("e")
        v = rf"${mant}\times10^{{{int(exp)}}}$"
    return _styled(v, se, delta, cell.bold, (r"\textbf{{{}}}", r"$\pm${}", r" {{\scriptsize {}}}"))


def _tex_groups(cols: list[OutColumn]) -> list[str]:
    if not any(c.group for c in cols):
        return []
    spans: list[tuple[str | None, int, int]] = []
    for i, c in enumerate(cols, start=2):
        if spans and spans[-1][0] == c.group:
            spans[-1] = (c.group, spans[-1][1], i)
        else:
            spans.append((c.group, i, i))
    cells, rules = [""], []
    for g, a, b in spans:
        cells.append(rf"\multicolumn{{{b - a + 1}}}{{c}}{{{tex_escape(g or '')}}}")
        if g:
            rules.append(rf"\cmidrule(lr){{{a}-{b}}}")
    return [" & ".join(cells) + r" \\", " ".join(rules)]


def _tex_table(page: Page, t: OutTable) -> list[str]:
    ncol = len(t.columns) + 1
    cap = tex_escape(t.title) + (". " + tex_escape(t.caption.strip()) if t.caption else "")
    out = [r"\begin{table}[t]", r"\centering", rf"\caption{{{cap}}}",
           rf"\label{{tab:{page.spec.name}-{t.id}}}",
           r"\begin{tabular}{l" + "r" * len(t.columns) + "}", r"\toprule"]
    out += _tex_groups(t.columns)
    out.append(" & ".join(["", *(tex_escape(c.label) for c in t.columns)]) + r" \\")
    out.append(r"\midrule")
    group = None
    for r in t.rows:
        if r.group != group and r.group:
            if group is not None:
                out.append(r"\midrule")
            out.append(rf"\multicolumn{{{ncol}}}{{l}}{{\textit{{{tex_escape(r.group)}}}}} \\")
        group = r.group
        label = tex_escape(r.label)
        label = rf"\textit{{{label}}}" if _italic(t, r) else label
        cells = [_tex_cell(r.cells.get(c.id), c, t.decimals) for c in t.columns]
        out.append(" & ".join([label, *cells]) + r" \\")
    if t.n_row:
        out.append(r"\midrule")
        out.append(" & ".join(["$n$", *(t.n_row.get(c.id, "") for c in t.columns)]) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}"]
    foot = ([legend(t)] if any(c.kind == "pct" for c in t.columns) else []) + t.notes
    foot += [f"Provenance: {line}." for line in t.provenance]
    if foot:
        out.append(r"\par\smallskip{\footnotesize " + " ".join(tex_escape(f) for f in foot)
                   + "}")
    out += [r"\end{table}", ""]
    return out


@RENDERERS.register("tex", help="LaTeX tables (booktabs)")
def render_tex(page: Page) -> str:
    out = [f"% Generated by dapo-bench leaderboard {page.spec_rel}; do not edit.",
           r"% Needs \usepackage{booktabs}.", ""]
    for t in page.tables:
        out += _tex_table(page, t)
    return "\n".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------- csv


def _num(v: float | None) -> str:
    return "" if v is None else format(v, ".10g")


@RENDERERS.register("csv", help="long-format CSV, one line per row x column")
def render_csv(page: Page) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["table", "row_id", "label", "kind", "source", "column", "value", "stderr",
                "delta", "n", "best"])
    for t in page.tables:
        for r in t.rows:
            for c in t.columns:
                cell = r.cells.get(c.id)
                if cell is None:
                    w.writerow([t.id, r.id, r.label, r.kind, r.source, c.id, "", "", "", "", ""])
                    continue
                w.writerow([t.id, r.id, r.label, r.kind, r.source, c.id, _num(cell.value),
                            _num(cell.stderr), _num(cell.delta),
                            "" if cell.n is None else cell.n, int(cell.bold)])
    return buf.getvalue()
