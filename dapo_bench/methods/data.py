"""A run's training data: problems and rewards from ``--task name[:split]``, and the sampled
rollouts of the offline baselines.

Train and test never meet. A task trains only when its spec says it is a training set
(``train.role: train``, e.g. ``gsm8k_train``, ``math_train``) or names a training split of a
built-in source (``arith``: ``rl_train``; ``--task arith:SPLIT`` picks another); anything else is a
UserError. Before any work :func:`check_disjoint` refuses training problems that also appear in
an eval task of the run (same question text, whitespace and case aside), naming both.

Prompts are rendered by the task through the policy's tokenizer (its chat template where the
spec asks for one) and tokenised ONCE (``models.encode_prompt``); every method and the SFT
control train on those ids, and sampling starts from them. Rewards are the task's verifier
(``Task.score``): a :class:`Verdict` per response, whose ``reward`` is 1.0 for a pass, else 0.0.

:func:`rollout_stage` is the resumable ``rollouts`` stage RFT and DPO share: the reference
policy's samples of the training problems, scored (``<run>/rollouts.jsonl``).

Not covered: mixing several training tasks in one run.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import cast

from dapo_bench.errors import UserError
from dapo_bench.io import atomic_write_jsonl, read_jsonl
from dapo_bench.methods.context import RunContext
from dapo_bench.methods.options import RunOptions
from dapo_bench.methods.scorer import Scorer
from dapo_bench.tasks.task import Task
from dapo_bench.training.rollouts import (
    Group,
    Request,
    TrainProblem,
    group_from_row,
    infra_errors,
)


def train_split(task: str) -> str | None:
    """The split ``--task`` trains on (None: a training-set task's own rows); see the doc."""
    from dapo_bench.tasks import TASKS

    name, _, split = task.partition(":")
    spec = TASKS.get(name)
    if spec.train.role == "train":
        if split:
            raise UserError(f"--task {task}: {name} is a training set; it has no splits")
        return None
    if not spec.train.split:
        raise UserError(f"--task {task}: {name} is an eval task (its spec has no training split);"
                        f" train on a training set such as gsm8k_train or math_train")
    if split and split not in spec.source.splits:
        raise UserError(f"--task {task}: unknown split {split!r} (splits: "
                        f"{', '.join(spec.source.splits)})")
    return split or spec.train.split


def load_train_task(ctx: RunContext, limit: int | None = None) -> Task:
    """The training ``Task`` (first ``limit`` problems) for the run's ``--task``."""
    from dapo_bench.tasks import load_task

    name = ctx.opts.task.partition(":")[0]
    return load_task(name, split=train_split(ctx.opts.task), data_dir=ctx.opts.data_dir,
                     limit=limit)


def question_key(text: str) -> str:
    return hashlib.sha256(" ".join(str(text).split()).lower().encode()).hexdigest()[:16]


def check_disjoint(train: Task, eval_tasks: list[Task]) -> dict:
    """UserError if a training problem's question is also one of an eval task's; else a summary
    of the training data (task, split, size, a hash of its questions) for the results."""
    keys = {question_key(p.question) for p in train.problems}
    for t in eval_tasks:
        shared = [p.id for p in t.problems if question_key(p.question) in keys]
        if shared:
            raise UserError(
                f"--task {train.name}: {len(shared)} of its problems are in eval task {t.name} "
                f"(e.g. {t.name} id {shared[0]}); train and test must not meet: train on a "
                f"training set (e.g. gsm8k_train) or evaluate on other tasks")
    digest = hashlib.sha256("".join(sorted(keys)).encode()).hexdigest()[:16]
    return {"task": train.name, "split": train.split, "n_problems": len(train.problems),
            "questions_hash": digest,
            "checked_against": {t.name: len(t.problems) for t in eval_tasks}}


def check_training_data(opts: RunOptions) -> dict:
    """Load the run's training task and eval tasks and :func:`check_disjoint` them."""
    from dapo_bench.tasks import load_task

    name = opts.task.partition(":")[0]
    train = load_task(name, split=train_split(opts.task), data_dir=opts.data_dir)
    evals = [load_task(t, data_dir=opts.data_dir) for t in opts.eval_tasks]
    return check_disjoint(train, evals)


def count_infra(ctx: RunContext, stage: str, groups: list[Group]) -> int:
    """Count ``stage``'s rollouts masked for an infrastructure error (``Group.infra``: never a
    0 reward) in its counts (results.json ``counts``); nothing is added when there are none."""
    n = infra_errors(groups)
    if n:
        ctx.count(stage, {"infra_errors": n})
    return n


def load_train_problems(ctx: RunContext, limit: int | None = None,
                        task: Task | None = None) -> list[TrainProblem]:
    """Training problems: prompts rendered through the policy's tokenizer and tokenised once,
    golds, and (where the spec has them) worked solutions. ``task``: the already loaded
    training task (else it is loaded with ``limit``)."""
    from dapo_bench.models import encode_prompt

    task = task or load_train_task(ctx, limit)
    tok = ctx.tokenizer
    out = []
    for p in task.problems:
        text = task.prompt(p, tok)
        out.append(TrainProblem(p.id, text, str(p.gold), p.solution,
                                tuple(encode_prompt(tok, text))))
    return out


@dataclass(frozen=True)
class OfflineSampling:
    """The sampling settings of the offline baselines' ``rollouts`` stage (RFT's and DPO's
    configs extend it): n_problems: training problems to sample on (None = all);
    samples_per_prompt: responses per problem; temperature, top_p, max_new_tokens: sampling;
    rollout_frac: the share of a FLOP budget that sampling spends (with a budget sampling goes
    on past ``n_problems`` until it has spent it, and training runs until the whole budget)."""

    n_problems: int | None = None
    samples_per_prompt: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 1024
    rollout_frac: float = 0.5
    chunk: int = 64


def rollout_stage(ctx: RunContext, cfg: OfflineSampling) -> tuple[list[Group], dict[str, tuple]]:
    """Stage ``rollouts``: sample and score on the reference policy; ``<run>/rollouts.jsonl``.
    Returns the groups and the prompt ids of each problem id. With a FLOP target
    (``training.budget``) sampling walks through the whole split, in order, until it has spent
    ``rollout_frac`` of the budget (training gets the rest); without one it samples the first
    ``n_problems``. The run's hooks are then told of the pass (``RunContext.sampled``: with
    ``--canaries`` they sample the canaries, logged, never in the groups returned)."""
    from dapo_bench.generation.base import SamplingParams
    from dapo_bench.methods.context import Sampled
    from dapo_bench.training import budget
    from dapo_bench.training.rollouts import sample_groups

    path = ctx.run_dir / "rollouts.jsonl"
    limit = budget.problems(ctx.ledger, cfg.n_problems)
    problems = load_train_problems(ctx, limit=limit)
    prompts = {p.id: p.prompt_ids for p in problems}

    def work() -> dict:
        scorer = Scorer(load_train_task(ctx, limit=limit))
        led = ctx.ledger
        params = SamplingParams(temperature=cfg.temperature, top_p=cfg.top_p,
                                max_new_tokens=cfg.max_new_tokens, seed=ctx.opts.seed)
        try:
            with ctx.progress("rollouts", len(problems), unit="problems") as advance, \
                    budget.phase(led, budget.share(led, led.total_flops, cfg.rollout_frac)):
                groups = sample_groups(
                    ctx.generator(ctx.reference), [Request.for_problem(p) for p in problems],
                    cfg.samples_per_prompt, scorer, params=params, chunk_size=cfg.chunk,
                    scope=ctx.scope("rollouts", advance), until=led.exhausted)
            ctx.sampled(Sampled("rollouts", ctx.generator(ctx.reference), scorer, len(groups),
                                cfg.samples_per_prompt, params,
                                lambda task: load_train_problems(ctx, task=task)))
        finally:
            scorer.close()
        count_infra(ctx, "rollouts", groups)
        atomic_write_jsonl(path, [g.to_row() for g in groups])
        n = sum(len(g.rollouts) for g in groups)
        acc = sum(sum(g.passed) for g in groups) / max(n, 1)
        return {"problems": len(groups), "samples": n, "sample_acc": acc}

    info = ctx.run_stage("rollouts", work)
    ctx.log(f"rollouts: {info['problems']} problems, {info['samples']} samples, "
            f"accuracy {info['sample_acc']:.3f}")
    return read_jsonl(path, group_from_row), prompts


def as_groups(groups: list[Group], prompts: dict[str, tuple[int, ...]]
              ) -> list[tuple[tuple[int, ...], list[tuple[int, ...]], list[bool]]]:
    """(prompt ids, response ids as generated, passed) per group: what RFT and DPO select from
    (token ids are the truth: the responses are trained on exactly as sampled)."""
    # a sampled rollout has its ids (sample_chunk refuses a backend that returns none)
    return [(prompts[g.problem_id], [tuple(cast("list[int]", r.token_ids)) for r in g.rollouts],
             g.passed) for g in groups]
