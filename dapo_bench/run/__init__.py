"""A training run: options -> run dir -> the method -> evaluation, control -> results.json.

The arrows are commands -> run -> methods -> training: ``commands/train.py`` parses flags into
:class:`RunOptions` and calls :func:`run_training`; the run resolves and checks the options
(``options.py``), claims the run dir (``rundir.py``), loads the reference policy once and runs
the registered method with a ``methods.context.RunContext`` (``train.py``), then evaluates the
reference and final policies, trains and evaluates the equal-compute SFT control, and writes
``results.json`` (``report.py``). A method holds its algorithm and its stages, not this
bookkeeping.

Not covered: several runs in one process at once.
"""

from dapo_bench.run.report import summary_lines
from dapo_bench.run.resolve import RunOptions, resolve_config, resolve_options, task_spec
from dapo_bench.run.train import run_training

__all__ = ["RunOptions", "resolve_config", "resolve_options", "run_training", "summary_lines",
           "task_spec"]
