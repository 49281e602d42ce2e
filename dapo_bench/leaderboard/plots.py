"""PNG plots of a leaderboard (matplotlib, Agg), one registry of plot kinds.

Kinds: ``acc_vs_flops`` (accuracy vs training FLOPs per method, with the base run as a line),
``training_curves`` (a ``history`` metric vs step per run, one line per ``iteration``), ``beta_ablation`` (accuracy vs
DAPO's beta) and ``calibration`` (the critic's reliability diagram from ``{brier, ece,
bins: [{p_mean, y_mean, n}]}``, or the ``critic.heldout`` of ``dapo_bench.methods.dapo.critic``
with ``mean_pred``/``mean_label`` bins; empty bins are dropped). A kind returns ``None`` when no run carries its data; the
caller then lists the plot as not drawn instead of writing an empty image.

Bytes are stable: no pyplot global state, matplotlib's default style inside a context, fixed
size and dpi, and PNG metadata without the Software/version entry (PNG has no timestamp
unless asked). The bytes still depend on the matplotlib and FreeType versions; the manifest
records the matplotlib version so tests can tell.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from typing import Any, TypeGuard

from dapo_bench.leaderboard.runs import Run, matches
from dapo_bench.leaderboard.spec import Plot
from dapo_bench.registry import Registry

DPI = 100
SIZE = (6.4, 4.2)
PLOTS: Registry[Callable[[Plot, list[Run]], object]] = Registry("plot kind")


def png_bytes(fig: Any) -> bytes:
    """Render a Figure to PNG bytes deterministically."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def draw(p: Plot, runs: list[Run]) -> bytes | None:
    """The PNG of plot ``p`` over ``runs``, or None when there is nothing to draw."""
    import matplotlib as mpl
    import matplotlib.style

    fn = PLOTS.get(p.kind)
    with mpl.style.context("default"), mpl.rc_context({"figure.dpi": DPI, "font.size": 9}):
        fig = fn(p, runs)
        if fig is None:
            return None
        return png_bytes(fig)


def _figure(title: str):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=SIZE)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    return fig, ax


def _finish(fig, ax, xlabel: str, ylabel: str, legend_loc: str | None = None):
    """Axis labels, the legend and a tight layout: the end of every plot."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8, **({"loc": legend_loc} if legend_loc else {}))
    fig.tight_layout()
    return fig


def _label(run: Run, p: Plot) -> str:
    v = run.get(p.label_by)
    return str(v) if v is not None else run.path


def _acc(run: Run, task: str | None, metric: str) -> tuple[float, float | None] | None:
    """(value, stderr) of the run's ``task`` metric in percent, or None where it has none (a
    plot whose kind reads a task names one: the spec's check)."""
    m = run.task_metric(task, metric)
    if m is None:
        return None
    se = m.get("stderr")
    return 100.0 * float(m["value"]), None if se is None else 100.0 * float(se)


def _with_iterations(p: Plot, runs: list[Run]) -> list[Run]:
    """Runs that ``p.match`` selects, with their per-iteration runs too."""
    return [r for r in runs if matches(r, {**p.match, "iteration": r.iteration})]


def _base_line(ax, p: Plot, runs: list[Run]) -> None:
    if not p.base_match:
        return
    base = [r for r in runs if matches(r, p.base_match)]
    for r in base[:1]:
        acc = _acc(r, p.task, p.metric)
        if acc is not None:
            ax.axhline(acc[0], color="0.4", linestyle="--", linewidth=1,
                       label=f"base ({acc[0]:.1f})")


@PLOTS.register("acc_vs_flops", help="accuracy vs training FLOPs per method")
def acc_vs_flops(p: Plot, runs: list[Run]):
    groups: dict[str, list[tuple[float, float, float | None]]] = {}
    for r in _with_iterations(p, runs):
        flops, acc = r.get("ledger.flops"), _acc(r, p.task, p.metric)
        if isinstance(flops, (int, float)) and flops > 0 and acc is not None:
            groups.setdefault(_label(r, p), []).append((float(flops), *acc))
    if not groups:
        return None
    fig, ax = _figure(p.title or f"{p.task} {p.metric} vs training compute")
    for name in sorted(groups):
        pts = sorted(groups[name])
        xs, ys = [x for x, _, _ in pts], [y for _, y, _ in pts]
        errs = [e or 0.0 for _, _, e in pts]
        ax.errorbar(xs, ys, yerr=errs, marker="o", capsize=3, label=name)
    _base_line(ax, p, runs)
    xs = [x for pts in groups.values() for x, _, _ in pts]
    if max(xs) / min(xs) > 10:
        ax.set_xscale("log")
    return _finish(fig, ax, "training FLOPs ≈ 2·N·(N_inf + 3·N_train)", f"{p.task} {p.metric} (%)")


@PLOTS.register("training_curves", help="a history metric vs step per run")
def training_curves(p: Plot, runs: list[Run]):
    series = []
    for r in runs:
        if r.derived or not matches(r, p.match):
            continue
        hist = r.get("history")
        if not isinstance(hist, list):
            continue
        by_iter: dict[object, list[tuple[float, float]]] = {}
        for h in hist:  # DAPO logs each iteration's steps from 0: one line per iteration
            if isinstance(h, dict) and _finite(h.get("step")) and _finite(h.get(p.metric)):
                by_iter.setdefault(h.get("iteration"), []).append(
                    (float(h["step"]), float(h[p.metric])))
        for it in sorted(by_iter, key=lambda k: (k is not None, str(k))):
            suffix = f" it{it}" if it is not None and len(by_iter) > 1 else ""
            series.append((_label(r, p) + suffix, r.path, sorted(by_iter[it])))
    if not series:
        return None
    fig, ax = _figure(p.title or f"training curves: {p.metric}")
    names = [s[0] for s in series]
    for name, path, pts in sorted(series):
        label = name if names.count(name) == 1 else f"{name} ({path})"
        ax.plot([x for x, _ in pts], [y for _, y in pts], linewidth=1.2, label=label)
    return _finish(fig, ax, "step", p.metric)


def _finite(v: object) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@PLOTS.register("beta_ablation", help="accuracy vs DAPO's beta")
def beta_ablation(p: Plot, runs: list[Run]):
    key = p.field or "config.beta"
    pts = []
    for r in runs:
        b, acc = r.get(key), _acc(r, p.task, p.metric)
        if matches(r, p.match) and _finite(b) and b > 0 and acc is not None:
            pts.append((float(b), *acc))
    if not pts:
        return None
    pts.sort()
    fig, ax = _figure(p.title or f"{p.task} {p.metric} vs {key}")
    ax.errorbar([b for b, _, _ in pts], [a for _, a, _ in pts],
                yerr=[e or 0.0 for _, _, e in pts], marker="o", capsize=3, label="DAPO")
    _base_line(ax, p, runs)
    if len(pts) > 1 and pts[-1][0] / pts[0][0] > 10:
        ax.set_xscale("log")
    return _finish(fig, ax, key.split(".")[-1], f"{p.task} {p.metric} (%)")


@PLOTS.register("calibration", help="critic reliability diagram")
def calibration(p: Plot, runs: list[Run]):
    key = p.field or "critic.heldout|critic"
    found = []
    for r in runs:
        if not matches(r, p.match):
            continue
        c = r.get(key)
        bins = c.get("bins") if isinstance(c, dict) else None
        if not isinstance(bins, list):
            continue
        pts = []
        for b in bins:  # {p_mean, y_mean, n} or dapo_bench.methods.dapo.critic's {mean_pred, ...}
            if not isinstance(b, dict):
                continue
            x, y = b.get("p_mean", b.get("mean_pred")), b.get("y_mean", b.get("mean_label"))
            n = b.get("n", 1)
            if _finite(x) and _finite(y) and _finite(n) and n > 0:
                pts.append((float(x), float(y), int(n)))
        if pts:
            found.append((r, c, sorted(pts)))
    if not found:
        return None
    fig, ax = _figure(p.title or "critic calibration (reliability diagram)")
    ax.plot([0, 1], [0, 1], color="0.5", linestyle=":", linewidth=1, label="perfect")
    total = max(n for _, _, pts in found for _, _, n in pts)
    for r, c, pts in found:
        label = _label(r, p) + (f" iter {r.iteration}" if r.iteration else "")
        stats = [f"{k}={c[k]:.3f}" for k in ("brier", "brier_skill", "ece")
                 if _finite(c.get(k))]
        if stats:
            label += " (" + ", ".join(stats) + ")"
        line, = ax.plot([x for x, _, _ in pts], [y for _, y, _ in pts], marker=None,
                        linewidth=1, label=label)
        ax.scatter([x for x, _, _ in pts], [y for _, y, _ in pts],
                   s=[10 + 90 * n / total for _, _, n in pts], color=line.get_color())
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    return _finish(fig, ax, "critic prediction V(s) (bin mean)", "Monte Carlo label (bin mean)",
                   legend_loc="upper left")
