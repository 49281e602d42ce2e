"""Training problems and rewards for a run: ``--task name[:split]`` through the task library.

``arith`` trains on its ``rl_train`` split (disjoint from ``test``/``test_ood``); another task
uses its ``train`` split when the spec lists one, else the split named after the colon, else its
default split (then it trains on what it is evaluated on: the caller is warned). Prompts are
rendered by the task (chat template of the policy's tokenizer where the spec asks for one);
rewards are the task's verifier (``Task.score``), 1.0 for a pass and 0.0 otherwise.

Not covered: mixing several training tasks in one run.
"""

from __future__ import annotations

from typing import Any

from dapo_bench.training.rollouts import TrainProblem


def _split_for(ctx: Any) -> str | None:
    from dapo_bench.tasks import TASKS

    name, _, split = ctx.opts.task.partition(":")
    if split:
        return split
    splits = TASKS.get(name).source.splits or ()
    for cand in ("rl_train", "train"):
        if cand in splits:
            return cand
    ctx.log(f"warning: task {name} has no training split; training on its default split")
    return None


class Scorer:
    """Rewards of response texts for training problems (by id), with one verifier instance."""

    def __init__(self, task: Any):
        self.task = task
        self._by_id = {p.id: p for p in task.problems}
        self._cm = task.verifier()
        self._verifier = self._cm.__enter__()

    def __call__(self, texts: list[str], problem_ids: list[str]) -> list[float]:
        probs = [self._by_id[i] for i in problem_ids]
        return [float(v.passed) for v in self.task.score(self._verifier, texts, probs)]

    def close(self) -> None:
        self._cm.__exit__(None, None, None)


def load_train_task(ctx: Any, limit: int | None = None):
    """The training ``Task`` (first ``limit`` problems) for the run's ``--task``."""
    from dapo_bench.tasks import load_task

    name = ctx.opts.task.partition(":")[0]
    return load_task(name, split=_split_for(ctx), data_dir=ctx.opts.data_dir, limit=limit)


def load_train_problems(ctx: Any, limit: int | None = None, tokenizer: Any = None,
                        task: Any = None) -> list[TrainProblem]:
    """Training problems with rendered prompts and (where the source has one) a gold solution.

    ``task``: the already loaded training task (else it is loaded with ``limit``)."""
    from dapo_bench.tasks.sources import load_rows

    task = task or load_train_task(ctx, limit)
    rows, _, _ = load_rows(task.spec, split=task.split, data_dir=ctx.opts.data_dir)
    id_field = task.spec.fields.id
    sol = {str(r.get(id_field, i)): r.get("solution") for i, r in enumerate(rows)}
    return [
        TrainProblem(p.id, task.prompt(p, tokenizer), str(p.gold), sol.get(p.id))
        for p in task.problems
    ]
