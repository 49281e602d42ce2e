"""``dapo-bench train --method NAME``: train with a registered method, evaluate, write results.

With no argument but ``--method dapo`` it runs DAPO (Liu et al., step-level) with the ``toy``
preset on the embedded ``arith`` task and the shipped reference policy, offline on CPU.
Configuration precedence: preset -> ``--config`` YAML -> ``--set key=value`` -> the named flags
(``--beta`` etc. are shorthands for ``--set beta=...``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer import Option as Opt

from dapo_bench.commands.common import (
    MAX_NEW_TOKENS_HELP,
    NAMES,
    REPORT_TO_HELP,
    examples,
    quiet_accelerator_probe,
    split_names,
)
from dapo_bench.methods import METHOD_NAMES

EXAMPLES = examples("""
    dapo-bench train --method dapo                  # DAPO on the embedded toy, offline, CPU
    dapo-bench train --method dapo --model Qwen/Qwen2.5-Math-7B-Instruct --task math_train
    dapo-bench train --method grpo --backend vllm --eval-serve 'vllm serve {model} --port {port}'
""")


def register(app: typer.Typer) -> None:
    @app.command("train", epilog=EXAMPLES)
    def train_cmd(
        method: Annotated[str, Opt(
            "--method", help=f"training method: {' | '.join(METHOD_NAMES)} ('dapo' = DAPO of Liu "
            "et al., step-level; 'dapo-bench list' describes each)")],
        model: Annotated[str | None, Opt(
            help="reference policy dir or hub id (arith default: the shipped toy policy)")] = None,
        task: Annotated[str, Opt(help="training task NAME or NAME:SPLIT")] = "arith",
        eval_tasks: Annotated[list[str] | None, Opt(
            metavar=NAMES, help="eval tasks, comma-separated or repeated (default: the task's "
            "own, e.g. arith -> arith,arith_ood)")] = None,
        eval_limit: Annotated[int | None, Opt(
            help="first N problems of each eval task (eval's --limit)")] = None,
        eval_max_new_tokens: Annotated[int | None, Opt(
            help="greedy eval " + MAX_NEW_TOKENS_HELP)] = None,
        eval_serve: Annotated[str | None, Opt(
            metavar="CMD", help="evaluate each policy through a server this shell command "
            "starts and stops: {model} = the policy's directory, {port} = a free loopback "
            "port, {rank} = the rank (e.g. 'vllm serve {model} --port {port}'); the openai "
            "backend's completions API, the prompt rendered here (docs/tasks.md)")] = None,
        config: Annotated[Path | None, Opt("--config", help="YAML method config")] = None,
        preset: Annotated[str | None, Opt(
            help="config preset (default: toy for arith, else default = paper)")] = None,
        set_: Annotated[list[str] | None, Opt(
            "--set", metavar="KEY=VALUE", help="config override (repeat)")] = None,
        beta: Annotated[float | None, Opt(help="dapo only: KL weight beta (paper 0.01)")] = None,
        n_rollouts: Annotated[int | None, Opt(
            help="dapo only: responses kept per problem, balanced (paper n=6)")] = None,
        mc_samples: Annotated[int | None, Opt(
            help="dapo only: Monte Carlo completions per state (paper m=16)")] = None,
        iterations: Annotated[int | None, Opt(help="dapo only: iterations")] = None,
        budget_flops: Annotated[float | None, Opt(
            help="stop training when the ledger reaches these FLOPs")] = None,
        control: Annotated[bool, Opt(
            help="also train and evaluate the equal-compute SFT control")] = True,
        control_batch_size: Annotated[int | None, Opt(
            help="the control's SFT pairs per step (default 64)")] = None,
        control_lr: Annotated[float | None, Opt(
            help="the control's SFT learning rate (default 1e-4)")] = None,
        out: Annotated[Path, Opt(help="parent directory of run dirs")] = Path("runs"),
        run_id: Annotated[str | None, Opt(
            help="run dir name (rerun with the same id to resume)")] = None,
        seed: Annotated[int, Opt(help="seed of sampling, data order and init")] = 0,
        backend: Annotated[str, Opt(
            help="generation backend: hf | vllm (not openai: training needs the sampled token "
            "ids; --eval-serve evaluates through a server)")] = "hf",
        deepspeed: Annotated[str, Opt(help="training engine: none | zero0..zero3")] = "none",
        offload: Annotated[bool, Opt(help="ZeRO CPU offload of optimizer state")] = False,
        bf16: Annotated[bool, Opt(help="DeepSpeed bf16 mixed precision (GPU)")] = False,
        micro_batch: Annotated[int, Opt(
            help="items per forward/backward pass; a larger batch accumulates gradients "
                 "(same update, less memory; 0 = the whole batch; not with --deepspeed)")] = 0,
        data_dir: Annotated[Path | None, Opt(help="benchmark files for file tasks")] = None,
        threads: Annotated[int | None, Opt(
            help="CPU torch threads (default: the task's, e.g. 1 for arith's tiny policy; "
                 "else up to 2)")] = None,
        quiet: Annotated[bool, Opt(help="plain log lines, no progress bars")] = False,
        checkpoint_every: Annotated[int, Opt(
            help="save a training stage every K steps (optimizer steps; GRPO/PPO: online "
                 "steps); a rerun resumes a killed stage there (0 = off: it restarts)")] = 0,
        canaries: Annotated[float, Opt(
            help="share F of impossible items sampled beside the training problems, never "
                 "trained on; a reward on one is a cheat event (0 = none)")] = 0.0,
        stop_on_cheat: Annotated[int, Opt(
            help="stop the run (exit 3, files kept) after K cheat events (0 = never)")] = 0,
        report_to: Annotated[str, Opt(help=REPORT_TO_HELP)] = "none",
    ) -> None:
        """Train a policy with a registered method (DAPO = Liu et al., step-level, offline)."""
        if method not in METHOD_NAMES:  # before importing torch and the methods (seconds)
            from dapo_bench.errors import UserError

            raise UserError(f"--method {method!r}: unknown (methods: {', '.join(METHOD_NAMES)})")
        from dapo_bench.telemetry import check_report_to

        check_report_to(report_to)  # before importing torch, too
        import torch
        from rich.console import Console

        quiet_accelerator_probe()

        from dapo_bench import run
        from dapo_bench.methods.base import flag_overrides

        overrides = list(set_ or []) + flag_overrides(method, {
            "beta": beta, "n_rollouts": n_rollouts, "mc_samples": mc_samples,
            "iterations": iterations})
        given: dict[str, Any] = {k: v for k, v in (("control_batch_size", control_batch_size),
                                                   ("control_lr", control_lr)) if v is not None}
        opts = run.RunOptions(
            model=model, task=task,
            eval_tasks=tuple(split_names(eval_tasks, "--eval-tasks")),
            eval_limit=eval_limit, eval_max_new_tokens=eval_max_new_tokens,
            eval_serve=eval_serve, backend=backend,
            deepspeed=deepspeed, offload=offload, bf16=bf16, micro_batch=micro_batch,
            budget_flops=budget_flops, control=control, seed=seed, out=str(out),
            run_id=run_id, data_dir=str(data_dir) if data_dir else None, quiet=quiet,
            checkpoint_every=checkpoint_every, canaries=canaries, stop_on_cheat=stop_on_cheat,
            report_to=report_to,
            **given,
        )
        if threads is None:  # the task's default model says how many threads suit it
            threads = (run.task_spec(opts).threads if model is None else None) or 2
        if not torch.cuda.is_available():
            torch.set_num_threads(max(1, min(threads, torch.get_num_threads())))
        res = run.run_training(method, opts, preset=preset,
                               config_yaml=str(config) if config else None,
                               overrides=overrides)
        from dapo_bench.dist import is_main

        if is_main():  # under torchrun every rank returns; one table is enough
            Console(stderr=True).print(summary_table(res))
            for line in run.summary_lines(res):  # the budget, the method's own summary
                Console(stderr=True).print(line, markup=False)


def summary_table(res: dict):
    """Reference / control / trained accuracy per eval task, with paired-bootstrap gains."""
    from rich.table import Table

    title = ("DAPO (Liu et al., step-level)" if res["method"] == "dapo" else res["method"])
    t = Table(title=f"{title}: {res['run_id']} ({res['ledger']['flops']:.3g} training FLOPs)")
    for col in ("task", "reference", "control", "trained", "gain vs ref", "gain vs control"):
        t.add_column(col)
    evals, comp = res["evals"], res["comparison"]

    def acc(label: str, task: str) -> str:
        m = evals.get(label, {}).get(task)
        return "-" if m is None else f"{100 * m['value']:.1f} ± {100 * (m['stderr'] or 0):.1f}"

    def gain(key: str, task: str) -> str:
        c = comp.get(key, {}).get(task)
        return "-" if c is None else f"{100 * c['diff']:+.1f} ± {100 * c['stderr']:.1f}"

    for task in evals["final"]:
        t.add_row(task, acc("reference", task), acc("control", task), acc("final", task),
                  gain("final_vs_reference", task), gain("final_vs_control", task))
    return t
