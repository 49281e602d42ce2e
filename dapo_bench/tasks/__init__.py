"""Benchmark tasks and suites: ``from dapo_bench.tasks import TASKS, SUITES, load_task``.

``TASKS`` maps a task name to its parsed :class:`TaskSpec` (one YAML file a task under
``tasks/``, installed as ``dapo_bench.task_specs``); ``SUITES`` maps a suite name to a tuple of
task names (``tasks/suites.yaml``). Both are filled on first use. ``register_spec_file`` adds a
spec from any path (a user's own benchmark) at run time. The registries live in ``spec.py``
(beside the spec they hold), so ``task.py`` reads them without importing this package.
"""

from __future__ import annotations

from dapo_bench.errors import UserError
from dapo_bench.tasks.spec import SUITES, TASKS, TaskSpec, parse_spec
from dapo_bench.tasks.task import Problem, Task, load_task


def register_spec_file(path) -> TaskSpec:
    """Parse a spec file and register it (its name must be new)."""
    from pathlib import Path

    spec = parse_spec(Path(path))
    TASKS.add(spec.name, spec, help=spec.description)
    return spec


def resolve_tasks(suite: str | None = None, tasks: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Task names from a suite and/or explicit names, deduplicated, in order."""
    names: list[str] = []
    if suite:
        names.extend(SUITES.get(suite))
    for t in tasks:
        TASKS.entry(t)  # unknown name -> UserError listing the known ones
        names.append(t)
    if not names:
        raise UserError("give --suite NAME or --tasks NAME[,NAME...] (see 'dapo-bench list')")
    return list(dict.fromkeys(names))


__all__ = ["SUITES", "TASKS", "Problem", "Task", "TaskSpec", "load_task", "register_spec_file",
           "resolve_tasks"]
