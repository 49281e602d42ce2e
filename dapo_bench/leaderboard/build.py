"""Render one leaderboard spec: result files -> ``<name>.{md,tex,csv}``, plots, manifest.

``render(spec_path, runs_dir, out_dir)`` loads the spec, collects its result files, builds
its tables, draws its plots and writes every output atomically beside the spec (or into
``out_dir``): ``<name>.md``, ``<name>.tex``, ``<name>.csv``, ``<name>.<plot>.png`` and
``<name>.manifest.json`` (content hashes of inputs and outputs, the matplotlib version, the
skipped files). Outputs are a pure function of the spec and the result files: no clock, no
absolute paths, sorted inputs; rendering twice gives identical bytes.

Not covered: running anything that produces result files (see ``dapo-bench train``/``eval``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from dapo_bench.io import atomic_write_bytes, atomic_write_json, atomic_write_text
from dapo_bench.leaderboard import plots as P
from dapo_bench.leaderboard.render import RENDERERS, Page
from dapo_bench.leaderboard.runs import Skipped, collect
from dapo_bench.leaderboard.spec import Spec, load_spec, resolve
from dapo_bench.leaderboard.table import build_table
from dapo_bench.provenance import hash_bytes

FORMATS = ("md", "tex", "csv")


@dataclass
class Rendered:
    spec: Spec
    written: list[Path] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    not_drawn: list[str] = field(default_factory=list)
    n_runs: int = 0


def render(spec_path: str | Path, runs_dir: str | Path | None = None,
           out_dir: str | Path | None = None, *, draw_plots: bool = True) -> Rendered:
    """Render ``spec_path``; ``runs_dir`` overrides the spec's ``inputs.dir``."""
    spec = load_spec(spec_path)
    out = Path(out_dir) if out_dir is not None else Path(spec.path).parent
    result = Rendered(spec)
    runs: list[Any] = []
    inputs_hash: dict[str, str] = {}
    if spec.inputs is not None:
        rdir = Path(runs_dir) if runs_dir is not None else resolve(spec, spec.inputs.dir)
        runs, result.skipped = collect(spec.inputs, rdir)
        for r in runs:
            if not r.derived:
                inputs_hash[r.path] = hash_bytes((rdir / r.path).read_bytes())
    result.n_runs = sum(not r.derived for r in runs)

    @cache
    def other(rel: str) -> Spec:
        return load_spec(resolve(spec, rel))

    tables = [build_table(spec, t, runs, other) for t in spec.tables]
    outputs: dict[str, bytes] = {}
    plot_links = []
    if draw_plots:
        for p in spec.plots:
            png = P.draw(p, runs)
            if png is None:
                result.not_drawn.append(p.id)
                continue
            name = f"{spec.name}.{p.id}.png"
            outputs[name] = png
            plot_links.append((p.title or p.id, name))
    page = Page(spec, Path(spec.path).name, tables, plot_links,
                [(s.path, s.reason) for s in result.skipped])
    for fmt in FORMATS:
        outputs[f"{spec.name}.{fmt}"] = RENDERERS.get(fmt)(page).encode("utf-8")
    for name in sorted(outputs):
        path = out / name
        if name.endswith(".png"):
            atomic_write_bytes(path, outputs[name])
        else:
            atomic_write_text(path, outputs[name].decode("utf-8"))
        result.written.append(path)
    manifest = {
        "spec": Path(spec.path).name,
        "inputs": inputs_hash,
        "outputs": {n: hash_bytes(b) for n, b in sorted(outputs.items())},
        "matplotlib": _mpl_version() if plot_links else None,
        "skipped": {s.path: s.reason for s in result.skipped},
        "not_drawn": result.not_drawn,
    }
    mpath = out / f"{spec.name}.manifest.json"
    atomic_write_json(mpath, manifest)
    result.written.append(mpath)
    return result


def check_runs(spec_path: str | Path, runs_dir: str | Path) -> None:
    """A ``--runs`` directory the user named must exist and hold result files the spec uses:
    otherwise a UserError, before anything is written (a typo must not replace committed
    tables with empty ones). The spec's own ``inputs.dir`` may be empty (runs not made yet)."""
    from dapo_bench.errors import UserError

    spec = load_spec(spec_path)
    if spec.inputs is None:
        return
    rdir = Path(runs_dir)
    if not rdir.is_dir():
        raise UserError(f"--runs {rdir}: no such directory")
    runs, skipped = collect(spec.inputs, rdir)
    if not any(not r.derived for r in runs):
        globs = ", ".join(spec.inputs.globs) or "-"
        extra = f" ({len(skipped)} skipped as bad)" if skipped else ""
        raise UserError(f"--runs {rdir}: no result file matches {spec_path}'s inputs "
                        f"(globs: {globs}){extra}; nothing written")


def _mpl_version() -> str:
    import matplotlib

    return matplotlib.__version__


def default_specs(root: str | Path = "leaderboards") -> list[Path]:
    """Every ``*.yaml`` spec in ``root``, sorted."""
    return sorted(Path(root).glob("*.yaml"))
