"""``dapo-bench eval``: evaluate a model on tasks or suites; see README "Evaluating a model".

Every flag is declared once, a dataclass field with its help: what to evaluate and how
(``--tasks``, ``--limit``, ...) is an :class:`EvalOptions` field, here, the served model's
(``--base-url``, ``--api``, ...) a ``ServedOptions`` field (``generation.openai_options``), and
``commands.common.with_options`` makes the flags from the fields.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from dapo_bench.commands.common import (
    NAMES,
    examples,
    options_of,
    quiet_accelerator_probe,
    with_options,
)
from dapo_bench.config import option
from dapo_bench.generation.openai_options import ServedOptions
from dapo_bench.methods.options import MAX_NEW_TOKENS_HELP
from dapo_bench.telemetry import REPORT_TO_HELP

EXAMPLES = examples("""
    dapo-bench eval --tasks arith --limit 20          # the embedded toy, offline, seconds
    dapo-bench eval --suite math --model Qwen/Qwen2.5-Math-1.5B-Instruct --limit 100
    dapo-bench eval --tasks gsm8k,math500 --backend openai --base-url http://127.0.0.1:8000/v1 --n 8 --temperature 0.6 --concurrency 32
""")


@dataclass(frozen=True)
class EvalOptions:
    """What ``dapo-bench eval`` evaluates and how (the served model's flags are
    ``ServedOptions``'). Each field is declared once, here, with its help: it is an ``eval``
    flag (:func:`register` makes the flags from the fields) and a row of docs/tasks.md's eval
    options table (``config.options_table``; tests/commands/test_eval_options.py keeps the two
    equal)."""

    suite: str | None = option(
        None, "a suite of tasks: math | code | arith | all (see 'dapo-bench list')")
    tasks: tuple[str, ...] = option((), "tasks, comma-separated or repeated", metavar=NAMES)
    model: str | None = option(
        None, "model directory or hub id (default: the tasks' default_model, e.g. arith's "
        "shipped policy); openai: the name the server knows (default: its only model)")
    backend: str = option(
        "hf", "generator backend: hf | vllm | openai (a served model, docs/tasks.md)")
    n: int = option(1, "samples per problem (n > 1 needs --temperature)")
    temperature: float = option(0.0, "0 = greedy")
    top_p: float = option(1.0, "nucleus sampling mass")
    max_new_tokens: int | None = option(None, MAX_NEW_TOKENS_HELP)
    limit: int | None = option(None, "first N problems of each task")
    # option() makes a field whose default is the value given (None, a Path): immutable, though
    # ruff cannot tell from a Path or list annotation
    data_dir: Path | None = option(  # noqa: RUF009
        None, "local benchmark files: DIR/math/gsm8k.jsonl, DIR/code/...")
    # repeated, never split at commas: a path may hold one
    data_file: list[str] | None = option(  # noqa: RUF009
        None, "a task's own JSONL/JSON/parquet file (repeat)", metavar="TASK=PATH")
    out: Path = option(Path("runs"), "parent directory of run dirs")  # noqa: RUF009
    run_id: str | None = option(None, "run directory name; reuse one to resume it")
    seed: int = option(0, "sampling seed")
    batch_size: int = option(64, "generator batch (rows)")
    threads: int | None = option(
        None, "hf: torch threads (default 1 for the arith reference policy)")
    quiet: bool = option(False, "plain log lines, no progress bars")
    report_to: str = option("none", REPORT_TO_HELP)


def register(app: typer.Typer, served_cls: type = ServedOptions,
             eval_cls: type = EvalOptions) -> None:
    """Add ``eval`` to *app*, its flags made from *eval_cls*' fields (``EvalOptions``) and then
    *served_cls*' (``ServedOptions``); the tests pass subclasses with a field added."""

    def eval_cmd(**values: Any) -> None:
        """Evaluate a model: runs/<run-id>/results.json + samples.jsonl (rerun to resume)."""
        from rich.console import Console

        from dapo_bench import dist
        from dapo_bench.errors import UserError
        from dapo_bench.eval import default_run_id, evaluate
        from dapo_bench.eval.report import summary_table
        from dapo_bench.eval.runner import check_sampling
        from dapo_bench.io import check_out_dir, check_run_id
        from dapo_bench.tasks import resolve_tasks
        from dapo_bench.telemetry import check_report_to, eval_metrics, recording

        o = options_of(eval_cls, {f.name: values.pop(f.name)
                                  for f in dataclasses.fields(eval_cls)})
        served = options_of(served_cls, values)
        suite, model, backend, n, temperature, top_p = (
            o.suite, o.model, o.backend, o.n, o.temperature, o.top_p)
        max_new_tokens, limit, data_dir, out, run_id = (
            o.max_new_tokens, o.limit, o.data_dir, o.out, o.run_id)
        seed, batch_size, threads, quiet, report_to = (
            o.seed, o.batch_size, o.threads, o.quiet, o.report_to)
        # every option is checked before anything is loaded or written
        check_report_to(report_to)
        check_sampling(n, temperature, top_p, max_new_tokens, limit)
        for flag, v in (("--batch-size", batch_size), ("--threads", threads)):
            if v is not None and v < 1:
                raise UserError(f"{flag} must be at least 1, got {v}")
        if run_id is not None:
            check_run_id(run_id)
        check_out_dir(out)
        names = resolve_tasks(suite, list(o.tasks))
        files = {}
        for item in o.data_file or ():
            name, sep, path = item.partition("=")
            if not sep or not path:
                raise UserError(f"--data-file {item!r}: expected TASK=PATH")
            if name not in names:
                raise UserError(f"--data-file {item!r}: task {name!r} is not being evaluated")
            files[name] = path
        gen = None
        if backend == "openai":  # the server is asked now: a wrong flag stops before any write
            gen = served.generator(model)
            model = gen.model
            if gen.prompt_format == "messages":
                from dapo_bench.tasks import TASKS
                from dapo_bench.tasks.task import check_chat

                for name in names:
                    check_chat(TASKS.get(name))
        else:
            given = served.given()
            if given:
                raise UserError(f"{given[0]} is an option of --backend openai (got --backend "
                                f"{backend})")
        if model is None:
            model, spec_threads = default_model_for(names)
            threads = threads or spec_threads
        rid = run_id or default_run_id(names, model, _settings(
            names, model, backend, n, temperature, top_p, max_new_tokens, seed, limit,
            data_dir, files, gen.fingerprint() if gen else None), suite)
        run_dir = out / rid
        main = dist.is_main()  # several ranks: one of them speaks for the run
        if main:
            print(f"run {rid} -> {run_dir} (the same command resumes it)", file=sys.stderr)
        quiet_accelerator_probe()
        config = {"suite": suite, "tasks": names, "command": "eval"}
        try:
            with recording(report_to, run_dir, name=rid, config=config):
                results = evaluate(
                    gen or model, names, run_dir=run_dir, n=n, temperature=temperature,
                    top_p=top_p, max_new_tokens=max_new_tokens, seed=seed, limit=limit,
                    backend=backend, data_dir=data_dir, data_files=files, quiet=quiet,
                    generator_options={"batch_size": batch_size, "threads": threads}
                    if backend == "hf" else None, config=config)
                eval_metrics("eval", {t: r["metrics"] for t, r in results["tasks"].items()})
        finally:
            if gen is not None:
                gen.close()
        if main:
            Console().print(summary_table(results))
            Console(stderr=True).print(f"wrote {run_dir / 'results.json'} and samples.jsonl")

    app.command("eval", epilog=EXAMPLES)(with_options(eval_cmd, eval_cls, served_cls))


def _settings(names, model, backend, n, temperature, top_p, max_new_tokens, seed, limit,
              data_dir, files, backend_settings=None) -> dict:
    """What the default run id is a function of: everything the samples depend on (paths made
    absolute), nothing cosmetic (--quiet, --out, --batch-size, --threads; openai: the address,
    the key, concurrency, timeouts and retries, so a rerun through another tunnel resumes)."""
    def absolute(p) -> str:
        return str(Path(p).resolve()) if Path(p).exists() else str(p)

    return {"tasks": names, "model": absolute(model), "backend": backend, "n": n,
            "temperature": temperature, "top_p": top_p, "max_new_tokens": max_new_tokens or None,
            "seed": seed, "limit": limit, "data_dir": absolute(data_dir) if data_dir else None,
            "data_files": {k: absolute(v) for k, v in sorted(files.items())},
            **({"backend_settings": backend_settings} if backend_settings else {})}


def default_model_for(names: list[str]) -> tuple[str, int | None]:
    """The model (and threads) the tasks' specs name when ``--model`` is not given: all of
    them must name the same one."""
    from dapo_bench.errors import UserError
    from dapo_bench.tasks import TASKS
    from dapo_bench.tasks.spec import default_model

    specs = [TASKS.get(n) for n in names]
    refs = {s.default_model for s in specs}
    if None in refs or len(refs) != 1:
        lacking = [s.name for s in specs if s.default_model is None]
        raise UserError("--model is required" + (f" (tasks without a default model: "
                        f"{', '.join(lacking)})" if lacking else " (the tasks name different "
                        "default models)"))
    return str(default_model(specs[0])), specs[0].threads
