"""A run's training data: problems and rewards from ``--task name[:split]``, and the sampled
rollouts of the offline baselines.

The training split is the one named after the colon, else the task spec's ``train.split``, else
its source's ``train``/``rl_train`` split; with none the run trains on the task's default split
(the caller is warned). Prompts are rendered by the task (the policy's chat template where the
spec asks for one); rewards are the task's verifier (``Task.score``): a :class:`Verdict` per
response, whose ``reward`` is 1.0 for a pass and 0.0 otherwise.

:func:`rollout_stage` is the resumable ``rollouts`` stage RFT and DPO share: the reference
policy's samples of the training problems, scored (``<run>/rollouts.jsonl``).

Not covered: mixing several training tasks in one run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dapo_bench.io import atomic_write_jsonl, read_jsonl
from dapo_bench.training.rollouts import Group, Request, TrainProblem, group_from_row


def _split_for(ctx: Any) -> str | None:
    from dapo_bench.tasks import TASKS

    name, _, split = ctx.opts.task.partition(":")
    if split:
        return split
    spec = TASKS.get(name)
    if spec.train.split:
        return spec.train.split
    for cand in ("rl_train", "train"):
        if cand in (spec.source.splits or ()):
            return cand
    ctx.log(f"warning: task {name} has no training split; training on its default split")
    return None


class Scorer:
    """Verdicts of response texts for training problems (by id), with one verifier instance."""

    def __init__(self, task: Any):
        self.task = task
        self._by_id = {p.id: p for p in task.problems}
        self._cm = task.verifier()
        self._verifier = self._cm.__enter__()

    def __call__(self, texts: list[str], problem_ids: list[str]) -> list:
        return self.task.score(self._verifier, texts, [self._by_id[i] for i in problem_ids])

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


@dataclass(frozen=True)
class OfflineSampling:
    """The sampling settings of the offline baselines' ``rollouts`` stage (RFT's and DPO's
    configs extend it): n_problems: training problems to sample on (None = all);
    samples_per_prompt: responses per problem; temperature, top_p, max_new_tokens: sampling;
    rollout_frac: the share of a FLOP budget that sampling may spend."""

    n_problems: int | None = None
    samples_per_prompt: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 1024
    rollout_frac: float = 0.5


def rollout_stage(ctx: Any, cfg: OfflineSampling) -> tuple[list[Group], dict[str, str]]:
    """Stage ``rollouts``: sample and score on the reference policy; ``<run>/rollouts.jsonl``.
    Returns the groups and the prompt of each problem id."""
    from dapo_bench.generation.base import SamplingParams
    from dapo_bench.training.rollouts import sample_groups

    path = ctx.run_dir / "rollouts.jsonl"
    problems = load_train_problems(ctx, limit=cfg.n_problems)
    prompts = {p.id: p.prompt for p in problems}

    def work() -> dict:
        scorer = Scorer(load_train_task(ctx, limit=cfg.n_problems))
        led = ctx.ledger
        cap = None
        if led.budget_flops is not None:
            cap = cfg.rollout_frac * led.budget_flops / (2.0 * led.n_params)
        params = SamplingParams(temperature=cfg.temperature, top_p=cfg.top_p,
                                max_new_tokens=cfg.max_new_tokens, seed=ctx.opts.seed)
        try:
            with ctx.progress("rollouts", len(problems), unit="problems") as advance:
                groups = sample_groups(
                    ctx.generator(ctx.opts.model), [Request.for_problem(p) for p in problems],
                    cfg.samples_per_prompt, scorer, params=params, chunk_size=64, ledger=led,
                    stage="rollouts", progress=advance,
                    until=lambda: led.exhausted() or (
                        cap is not None and led.stages["rollouts"].n_inf >= cap))
        finally:
            scorer.close()
        atomic_write_jsonl(path, [g.to_row() for g in groups])
        n = sum(len(g.rollouts) for g in groups)
        acc = sum(sum(g.passed) for g in groups) / max(n, 1)
        return {"problems": len(groups), "samples": n, "sample_acc": acc}

    info = ctx.run_stage("rollouts", work)
    ctx.log(f"rollouts: {info['problems']} problems, {info['samples']} samples, "
            f"accuracy {info['sample_acc']:.3f}")
    return [group_from_row(r) for r in read_jsonl(path)], prompts


def as_groups(groups: list[Group], prompts: dict[str, str]) -> list[tuple[str, list, list]]:
    """(prompt, response texts, passed) per group: what RFT and DPO select from."""
    return [(prompts[g.problem_id], g.texts, g.passed) for g in groups]
