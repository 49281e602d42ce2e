"""The training task's reward as a run uses it: :class:`Scorer`, a ``training.rollouts.Score``.

Apart from ``methods.data`` (which loads the problems it judges) so that ``RunContext``'s
hook events can name its type without an import circle."""

from __future__ import annotations

from collections.abc import Sequence

from dapo_bench.tasks.task import Problem, Task
from dapo_bench.verifiers.base import Verdict, Verifier


class Scorer:
    """The training task's reward (a ``training.rollouts.Score``): verdicts of response texts
    for training problems (by id), through ``Task.score`` and one instance of the task's
    verifier (closed by :meth:`close`)."""

    def __init__(self, task: Task):
        self.task = task
        self._by_id = {p.id: p for p in task.problems}
        self._verifier: Verifier = task.make_verifier()

    def add(self, problems: Sequence[Problem]) -> None:
        """Judge these problems too, by the same verifier (the run's canaries)."""
        for p in problems:
            if p.id in self._by_id:
                raise ValueError(f"problem id {p.id!r} is already a training problem")
            self._by_id[p.id] = p

    def __call__(self, texts: list[str], problem_ids: list[str],
                 finished: list[bool] | None = None) -> list[Verdict]:
        return self.task.score(self._verifier, texts, [self._by_id[i] for i in problem_ids],
                               finished)

    def close(self) -> None:
        self._verifier.close()
