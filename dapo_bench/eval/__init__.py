"""Eval: run tasks through a generator and a verifier, score them, write result files.

``evaluate`` is the library entry point (also used by training methods to score a policy);
``compare_runs``/``paired_bootstrap`` compare two runs on the same problems.
"""

from dapo_bench.eval.metrics import (
                                     bootstrap_stderr,
                                     maj_at_k,
                                     paired_bootstrap,
                                     pass_at_k,
                                     task_metrics,
)
from dapo_bench.eval.runner import default_run_id, evaluate
from dapo_bench.eval.store import compare_runs, per_problem_scores

__all__ = ["bootstrap_stderr", "compare_runs", "default_run_id", "evaluate", "maj_at_k",
           "paired_bootstrap", "pass_at_k", "per_problem_scores", "task_metrics"]
