"""Registers the task specs shipped in ``dapo_bench.task_specs`` (``tasks/*.yaml``) and the
suites of ``tasks/suites.yaml``. Imported lazily by the TASKS/SUITES registries."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from dapo_bench.errors import UserError
from dapo_bench.io import read_yaml_mapping
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
    data = read_yaml_mapping(suites_path)
    for name, body in data.items():
        tasks = tuple(body.get("tasks", ()))
        for t in tasks:
            if t not in TASKS:
                raise UserError(f"{suites_path}: suite {name!r} names unknown task {t!r}")
        SUITES.add(name, tasks, help=f"{body.get('description', '')} ({', '.join(tasks)})")


_register()
