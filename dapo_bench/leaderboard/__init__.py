"""Leaderboards: paper-style tables and plots regenerated from result files.

``leaderboards/<name>.yaml`` (a spec, see ``spec``) names result files, tables and plots;
``render`` writes ``<name>.{md,tex,csv}``, ``<name>.<plot>.png`` and a manifest beside it.
Modules: ``spec`` (parse/check), ``runs`` (find/load/match result files), ``table`` (the table
model: values, deltas, best, n, provenance), ``render`` (md/tex/csv), ``plots`` (PNG),
``build`` (orchestration). The CLI is ``dapo-bench leaderboard``.
"""

from dapo_bench.leaderboard.build import Rendered, default_specs, render

__all__ = ["Rendered", "default_specs", "render"]
