"""``run_training(method, opts, ...)``: one training run, start to end.

1. checks every option and resolves the config (``run.resolve``) BEFORE anything is written,
   then claims ``runs/<run-id>/`` with ``config.json`` (``run.rundir``);
2. loads the reference policy once (a ``models.Policy``, handed to the run's context) and runs
   the method, whose stages go through ``ctx.run_stage`` (``methods.context``), inside the
   run's ``--report-to`` recording (``dapo_bench.telemetry``: TensorBoard / W&B scalars);
3. evaluates the reference and the final policy greedily on the eval tasks, and with
   ``control`` trains and evaluates the equal-compute SFT control (``run.report``);
4. writes ``results.json`` (schema and builder in ``dapo_bench.results``).

Not covered: online methods mixing several training tasks; resuming a run under another config.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dapo_bench import dist, telemetry
from dapo_bench.config import to_dict
from dapo_bench.io import check_out_dir, check_run_id
from dapo_bench.methods import METHODS
from dapo_bench.methods.base import MethodSpec
from dapo_bench.methods.canaries import CanaryHook
from dapo_bench.methods.context import Hook, RunContext
from dapo_bench.nodes import check_shared_dir
from dapo_bench.run.resolve import RunOptions, resolve_config, resolve_options
from dapo_bench.run.rundir import claim_run_dir, default_run_id
from dapo_bench.training.scope import Meter

# The hooks every run registers (``RunContext.sampled``): one fresh instance per run. A new
# concern that watches sampling (a monitor, a budget) is one entry here; no method changes.
HOOKS: list[Callable[[], Hook]] = [CanaryHook]
# The meters every run registers (``RunContext.meters``, carried by every stage's scope): one
# fresh instance per run, told of every token a stage is charged (``training.scope.Meter``).
METERS: list[Callable[[], Meter]] = []

def run_training(
    method: str,
    opts: RunOptions | None = None,
    *,
    preset: str | None = None,
    config_yaml: str | None = None,
    overrides: list[str] | tuple[str, ...] = (),
) -> dict:
    """Train with ``method``, evaluate, write ``results.json``; returns the results dict."""
    opts = opts or RunOptions()
    from dapo_bench.methods.data import check_training_data
    from dapo_bench.models import Policy, count_params
    from dapo_bench.run.report import train_results

    spec: MethodSpec = METHODS.get(method)
    preset, cfg = resolve_config(spec, opts, preset, config_yaml, list(overrides))
    opts = resolve_options(method, opts)
    if opts.run_id is not None:
        check_run_id(opts.run_id)
    check_out_dir(opts.out)
    saved: dict[str, Any] = {"method": method, "preset": preset, "options": to_dict(opts),
                             "config": to_dict(cfg)}
    if opts.run_id is None:  # a function of the settings: rerunning the command resumes
        opts = dataclasses.replace(opts, run_id=default_run_id(method, opts, saved))
        saved["options"]["run_id"] = opts.run_id
    assert opts.model is not None and opts.run_id is not None  # resolve_options, just above
    train_data = check_training_data(opts)  # train and test never meet (a UserError if they do)
    ref = Policy(opts.model)
    n_params = count_params(ref.model)  # a bad model dir fails before anything is written
    run_dir = Path(opts.out) / opts.run_id
    if dist.is_main():
        claim_run_dir(run_dir, saved, spec)
    check_shared_dir(run_dir)  # every node sees this folder, or every rank stops here
    t0 = time.perf_counter()
    ctx = RunContext(run_dir, opts, n_params, method)
    ctx.hooks.extend(make() for make in HOOKS)  # what watches every sampling pass
    ctx.meters.extend(make() for make in METERS)  # what is told of every charge
    ctx.adopt(ref)  # loaded once: the first stage that uses the reference takes this one
    ctx.log(f"run dir {run_dir} (method {method}, preset {preset})")
    try:
        with telemetry.recording(opts.report_to, run_dir, name=opts.run_id, config=saved):
            out = spec.fn(ctx, cfg)
            results = train_results(ctx, spec, saved, out, t0, train_data)
    finally:
        ctx.close()
    return results
