"""``dapo-bench eval``: evaluate a model on tasks or suites; see README "Evaluating a model".

The served model's flags (``--base-url``, ``--api``, ...) are not written here: each is a
``ServedOptions`` field, declared once with its help (``generation.openai_options``), and
``commands.common.with_options`` makes the flags from the fields.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from dapo_bench.commands.common import (
    NAMES,
    examples,
    options_of,
    quiet_accelerator_probe,
    split_names,
    with_options,
)
from dapo_bench.generation.openai_options import ServedOptions
from dapo_bench.methods.options import MAX_NEW_TOKENS_HELP
from dapo_bench.telemetry import REPORT_TO_HELP

Opt = typer.Option
EXAMPLES = examples("""
    dapo-bench eval --tasks arith --limit 20          # the embedded toy, offline, seconds
    dapo-bench eval --suite math --model Qwen/Qwen2.5-Math-1.5B-Instruct --limit 100
    dapo-bench eval --tasks gsm8k,math500 --backend openai --base-url http://127.0.0.1:8000/v1 --n 8 --temperature 0.6 --concurrency 32
""")


def register(app: typer.Typer, served_cls: type = ServedOptions) -> None:
    """Add ``eval`` to *app*, its served-model flags made from *served_cls*' fields
    (``ServedOptions``; the tests pass a subclass with a field added)."""

    def eval_cmd(
        suite: Annotated[str | None, Opt(
            "--suite",
            help="a suite of tasks: math | code | arith | all (see 'dapo-bench list')")] = None,
        tasks: Annotated[list[str] | None, Opt(
            "--tasks", metavar=NAMES, help="tasks, comma-separated or repeated")] = None,
        model: Annotated[str | None, Opt(
            "--model", help="model directory or hub id (default: the tasks' default_model, "
            "e.g. arith's shipped policy); openai: the name the server knows (default: its "
            "only model)")] = None,
        backend: Annotated[str, Opt(
            help="generator backend: hf | vllm | openai (a served model, docs/tasks.md)")] = "hf",
        n: Annotated[int, Opt("--n", help="samples per problem (n > 1 needs --temperature)")] = 1,
        temperature: Annotated[float, Opt(help="0 = greedy")] = 0.0,
        top_p: Annotated[float, Opt("--top-p", help="nucleus sampling mass")] = 1.0,
        max_new_tokens: Annotated[int | None, Opt(
            "--max-new-tokens", help=MAX_NEW_TOKENS_HELP)] = None,
        limit: Annotated[int | None, Opt(help="first N problems of each task")] = None,
        data_dir: Annotated[Path | None, Opt(
            "--data-dir", help="local benchmark files: DIR/math/gsm8k.jsonl, DIR/code/...")] = None,
        data_file: Annotated[list[str] | None, Opt(
            "--data-file", metavar="TASK=PATH",
            help="a task's own JSONL/JSON/parquet file (repeat)")] = None,
        out: Annotated[Path, Opt("--out", help="parent directory of run dirs")] = Path("runs"),
        run_id: Annotated[str | None, Opt(
            "--run-id", help="run directory name; reuse one to resume it")] = None,
        seed: Annotated[int, Opt(help="sampling seed")] = 0,
        batch_size: Annotated[int, Opt("--batch-size", help="generator batch (rows)")] = 64,
        threads: Annotated[int | None, Opt(
            "--threads", help="hf: torch threads (default 1 for the arith reference policy)")] = None,
        quiet: Annotated[bool, Opt(help="plain log lines, no progress bars")] = False,
        report_to: Annotated[str, Opt("--report-to", help=REPORT_TO_HELP)] = "none",
        **served_values: Any,
    ) -> None:
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

        # every option is checked before anything is loaded or written
        check_report_to(report_to)
        check_sampling(n, temperature, top_p, max_new_tokens, limit)
        for flag, v in (("--batch-size", batch_size), ("--threads", threads)):
            if v is not None and v < 1:
                raise UserError(f"{flag} must be at least 1, got {v}")
        if run_id is not None:
            check_run_id(run_id)
        check_out_dir(out)
        names = resolve_tasks(suite, split_names(tasks, "--tasks"))
        files = {}
        for item in data_file or ():
            name, sep, path = item.partition("=")
            if not sep or not path:
                raise UserError(f"--data-file {item!r}: expected TASK=PATH")
            if name not in names:
                raise UserError(f"--data-file {item!r}: task {name!r} is not being evaluated")
            files[name] = path
        served = options_of(served_cls, served_values)
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

    app.command("eval", epilog=EXAMPLES)(with_options(eval_cmd, served_cls))


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
