"""Registers the task specs shipped in ``dapo_bench.task_specs`` (``tasks/*.yaml``) and the
suites of ``tasks/suites.yaml``. Imported lazily by the TASKS/SUITES registries."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

from dapo_bench.errors import UserError
from dapo_bench.tasks import SUITES, TASKS
from dapo_bench.tasks.spec import parse_spec

SUITES_FILE = "suites.yaml"


def _register() -> None:
    root = Path(str(resources.files("dapo_bench.task_specs")))
    for path in sorted(root.glob("*.yaml")):
        if path.name == SUITES_FILE:
            continue
        spec = parse_spec(path)
        TASKS.add(spec.name, spec, help=spec.description)
    suites_path = root / SUITES_FILE
    data = yaml.safe_load(suites_path.read_text(encoding="utf-8")) or {}
    for name, body in data.items():
        tasks = tuple(body.get("tasks", ()))
        for t in tasks:
            if t not in TASKS:
                raise UserError(f"{suites_path}: suite {name!r} names unknown task {t!r}")
        SUITES.add(name, tasks, help=f"{body.get('description', '')} ({', '.join(tasks)})")


_register()
