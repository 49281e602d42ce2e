"""What methods evaluate and train on besides their own data: :func:`eval_policy` (a policy's
greedy accuracy on the run's eval tasks, as a resumable stage: the eval library,
``dapo_bench.eval.evaluate``, into ``<run>/eval/<label>/``; with ``--eval-serve CMD``, through
a server started for that policy, ``generation.launched``, into ``<run>/eval/<label>-served/``,
the server's log beside) and :func:`train_problem_solutions`
(the training problems' gold solutions as SFT rows: the ``sft`` method's data and the
equal-compute control's).

Not covered: sampled (n > 1) evaluation of training runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from dapo_bench import telemetry
from dapo_bench.errors import UserError
from dapo_bench.generation.base import Generator
from dapo_bench.methods.context import RunContext
from dapo_bench.models import Policy


def eval_policy(ctx: RunContext, model_dir: str | Policy, label: str) -> dict:
    """Greedy accuracy of ``model_dir`` (a saved dir or a ``models.Policy``) on the eval
    tasks: {task: {value, stderr, n}}."""
    from dapo_bench.eval import evaluate

    serve = ctx.opts.eval_serve
    out_dir = ctx.run_dir / "eval" / (f"{label}-served" if serve else label)

    def run(gen: Generator) -> dict:
        res = evaluate(
            gen, list(ctx.opts.eval_tasks), run_dir=out_dir,
            limit=ctx.opts.eval_limit, max_new_tokens=ctx.opts.eval_max_new_tokens,
            quiet=ctx.opts.quiet, method=label, data_dir=ctx.opts.data_dir,
            seed=ctx.opts.seed, chunk=ctx.opts.gen_batch_size,
        )
        return {t: {**r["metrics"]["acc"], "n": r["n_problems"]} for t, r in res["tasks"].items()}

    def work() -> dict:
        return run(ctx.generator(model_dir)) if serve is None else served(run, serve)

    def served(run: Callable[[Generator], dict], serve: str) -> dict:
        from dapo_bench import dist
        from dapo_bench.generation.base import load_generator
        from dapo_bench.generation.launched import LaunchedServer

        path = getattr(model_dir, "path", None) or str(model_dir)
        log = out_dir / f"server.rank{dist.rank()}.log"
        ctx.log(f"eval {label}: starting its server (--eval-serve; output in {log})")
        t0 = time.perf_counter()
        with LaunchedServer(serve, path, log, rank=dist.rank()) as server:
            ctx.log(f"eval {label}: the server answers at {server.base_url} after "
                    f"{time.perf_counter() - t0:.0f}s")
            gen = load_generator("openai", path, base_url=server.base_url, api="completions",
                                 tokenizer=path)
            try:
                return run(gen)
            finally:
                gen.close()

    key = {"tasks": list(ctx.opts.eval_tasks), "limit": ctx.opts.eval_limit,
           "max_new_tokens": ctx.opts.eval_max_new_tokens,  # other eval options: rerun it
           **({"served": serve} if serve else {})}
    info = ctx.run_stage(f"eval.{label}", work, every_rank=True, key=key, record=False)
    telemetry.eval_metrics(f"eval/{label}", {t: {"acc": m} for t, m in info.items()})
    ctx.log("eval " + label + ": " + ", ".join(
        f"{t} {m['value']:.3f}±{m['stderr'] or 0:.3f}" for t, m in info.items()))
    return info


def train_problem_solutions(ctx: RunContext) -> list[tuple[Sequence[int], Sequence[int]]]:
    """SFT rows (prompt ids, gold solution ids + EOS) of the training split: what the ``sft``
    method and the SFT control train on (the prompt ids every method samples from)."""
    from dapo_bench.methods.data import load_train_problems
    from dapo_bench.training.sft import sft_rows

    pairs = [(p.prompt_ids, p.solution) for p in load_train_problems(ctx) if p.solution]
    if not pairs:
        raise UserError(f"task {ctx.opts.task}: no gold solutions (its spec names no "
                        f"fields.solution) for SFT or the control (--no-control skips it)")
    return sft_rows(ctx.tokenizer, pairs)
