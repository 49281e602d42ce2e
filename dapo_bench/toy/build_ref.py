"""Build the arith reference policy: SFT of the tiny Llama on the fixed ``sft`` split.

    python -m dapo_bench.toy.build_ref --out dapo_bench/assets/arith-ref

Trains a freshly initialised (seeded) ``tiny_llama`` on the ``sft`` split (a fixed, limited
set) for ``--epochs`` passes with a cosine learning rate, so that it ends on a plateau rather
than on the steep part of the learning curve. Then it writes the model directory (config,
safetensors, tokenizer) and ``build_info.json`` beside it: the learning curve, greedy accuracy
on ``test`` and ``test_ood`` (overall and per number of steps), where wrong answers first go
wrong, and a plateau check (accuracy after ``--plateau-epochs`` more SFT epochs on a copy; the
copy is not saved). Not covered: hyper-parameter search; the numbers it prints are for this
seed and machine.
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import torch
import typer

from dapo_bench.arith import PROMPT_TEMPLATE, is_correct, make_split
from dapo_bench.generation.base import SamplingParams
from dapo_bench.generation.hf import HFGenerator
from dapo_bench.io import atomic_write_json, read_json
from dapo_bench.models import count_params, load_policy, save_policy
from dapo_bench.provenance import package_versions
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training.engine import OptimConfig
from dapo_bench.training.sft import SFTConfig, sft_rows, train_sft

MAX_NEW_TOKENS = 96


def sft_pairs(rows: list[dict]) -> list[tuple[str, str]]:
    return [(PROMPT_TEMPLATE.format(question=r["question"]), r["solution"]) for r in rows]


def first_wrong_line(row: dict, text: str) -> str:
    """Where a wrong solution first departs from the reference: intermediate | last | boxed."""
    ref, got = row["solution"].split("\n"), text.split("\n")
    for i, line in enumerate(ref):
        if i >= len(got) or got[i] != line:
            return (
                "intermediate"
                if i < row["n_steps"] - 1
                else "last"
                if i < len(ref) - 1
                else "boxed"
            )
    return "boxed"


def evaluate(model, tok, rows: list[dict], batch_size: int = 128) -> dict:
    """Greedy accuracy on ``rows`` (overall, per n_steps) and where wrong answers go wrong."""
    gen = HFGenerator.from_model(model, tok, batch_size=batch_size)
    prompts = [PROMPT_TEMPLATE.format(question=r["question"]) for r in rows]
    outs = gen.generate(prompts, SamplingParams(max_new_tokens=MAX_NEW_TOKENS))
    ok = [is_correct(o[0].text, r["answer"]) for o, r in zip(outs, rows)]
    by_steps: dict[int, list[bool]] = {}
    for r, c in zip(rows, ok):
        by_steps.setdefault(r["n_steps"], []).append(c)
    where = Counter(first_wrong_line(r, o[0].text) for r, o, c in zip(rows, outs, ok) if not c)
    n_wrong = max(1, sum(where.values()))
    return {
        "n": len(rows),
        "accuracy": sum(ok) / len(rows),
        "by_steps": {str(k): round(sum(v) / len(v), 4) for k, v in sorted(by_steps.items())},
        "wrong_first_at": {k: round(v / n_wrong, 4) for k, v in sorted(where.items())},
    }


def plateau_checks(model, tok, pairs, test, before, epochs, lrs, batch_size, seed) -> list[dict]:
    """Accuracy after ``epochs`` more constant-lr SFT epochs on a copy, for each lr in ``lrs``."""
    out = []
    for plr in lrs if epochs > 0 else []:
        more = copy.deepcopy(model)
        pcfg = SFTConfig(
            epochs=epochs,
            batch_size=batch_size,
            seed=seed + 1000,
            log_every=10**9,
            optim=OptimConfig(lr=plr),
        )
        steps = train_sft(more, tok, sft_rows(tok, pairs), pcfg).steps
        after = evaluate(more, tok, test)["accuracy"]
        row = {
            "epochs": epochs,
            "lr": plr,
            "steps": steps,
            "test_acc_before": before,
            "test_acc_after": after,
            "delta": round(after - before, 4),
        }
        typer.echo(f"plateau check: {row}")
        out.append(row)
    return out


def build(
    out: Annotated[Path, typer.Option(help="Directory to write the model to (replaced).")],
    epochs: Annotated[int, typer.Option(help="SFT passes over the sft split.")] = 30,
    lr: Annotated[float, typer.Option(help="Peak AdamW learning rate.")] = 2e-3,
    batch_size: Annotated[int, typer.Option(help="Pairs per optimizer step.")] = 64,
    sft_size: Annotated[int, typer.Option(help="Problems of the sft split to train on.")] = 1500,
    eval_every: Annotated[int, typer.Option(help="Epochs between quick evals (0: none).")] = 3,
    eval_n: Annotated[int, typer.Option(help="Test problems in each quick eval.")] = 300,
    plateau_epochs: Annotated[
        float, typer.Option(help="Extra SFT epochs of the plateau check.")
    ] = 2.0,
    plateau_lr: Annotated[
        Optional[list[float]],  # noqa: UP045 (typer needs Optional)
        typer.Option(help="Learning rate(s) of the plateau check [default: 1e-4 and 5e-4]."),
    ] = None,
    check_only: Annotated[
        bool, typer.Option(help="Skip training: re-evaluate the model in --out, redo the checks.")
    ] = False,
    seed: Annotated[int, typer.Option(help="Seed of the initialisation and data order.")] = 0,
    threads: Annotated[int, typer.Option(help="torch threads.")] = 1,
) -> None:
    """SFT the tiny Llama on the fixed arith sft split and save it with build_info.json."""
    torch.set_num_threads(threads)
    plateau_lr = plateau_lr or [1e-4, 5e-4]
    t0 = time.perf_counter()
    pairs = sft_pairs(make_split("sft", sft_size))
    test, ood = make_split("test"), make_split("test_ood")
    if check_only:
        model, tok = load_policy(out)
        info = read_json(Path(out) / "build_info.json")
        pairs = sft_pairs(make_split("sft", info["sft"]["sft_size"]))
        before = info["final"]["test"]["accuracy"]
        info["final"] = {"test": evaluate(model, tok, test), "test_ood": evaluate(model, tok, ood)}
        if info["final"]["test"]["accuracy"] != before:
            typer.echo(f"note: test accuracy {before} at build time, now {info['final']}")
        info["plateau"] = plateau_checks(
            model, tok, pairs, test, before, plateau_epochs, plateau_lr, batch_size, seed
        )
        atomic_write_json(Path(out) / "build_info.json", info)
        return
    tok = build_char_tokenizer()
    model = tiny_llama(tok, seed=seed)
    cfg = SFTConfig(
        epochs=epochs,
        batch_size=batch_size,
        warmup_steps=20,
        schedule="cosine",
        min_lr_ratio=0.05,
        seed=seed,
        log_every=50,
        optim=OptimConfig(lr=lr, weight_decay=0.0),
    )
    curve: list[dict] = []

    def on_epoch(epoch: int, st) -> bool:
        if eval_every and (epoch % eval_every == 0 or epoch == epochs):
            acc = evaluate(model, tok, test[:eval_n])["accuracy"]
            curve.append({"epoch": epoch, "step": st.steps, "loss": st.loss, "test_acc": acc})
            typer.echo(f"epoch {epoch} step {st.steps} loss {st.loss:.4f} acc@{eval_n} {acc:.3f}")
        return False

    def on_log(st) -> None:
        typer.echo(f"  step {st.steps} epoch {st.epochs:.2f} loss {st.loss:.4f} {st.seconds:.0f}s")

    stats = train_sft(model, tok, sft_rows(tok, pairs), cfg, on_log=on_log, on_epoch=on_epoch)
    train_s = time.perf_counter() - t0
    save_policy(model, tok, out)
    final = {"test": evaluate(model, tok, test), "test_ood": evaluate(model, tok, ood)}
    typer.echo(f"final: {final}")
    plateau = plateau_checks(
        model,
        tok,
        pairs,
        test,
        final["test"]["accuracy"],
        plateau_epochs,
        plateau_lr,
        batch_size,
        seed,
    )
    info = {
        "command": "python -m dapo_bench.toy.build_ref",
        "n_params": count_params(model),
        "sft": {
            "sft_size": sft_size,
            "epochs": epochs,
            "steps": stats.steps,
            "lr": lr,
            "batch_size": batch_size,
            "schedule": "cosine",
            "trained_tokens": stats.tokens,
            "final_loss": stats.loss,
            "seconds": round(stats.seconds, 1),
        },
        "threads": threads,
        "seed": seed,
        "build_seconds": round(train_s, 1),
        "curve": curve,
        "loss_history": stats.history,
        "final": final,
        "plateau": plateau,
        "versions": package_versions(),
    }
    atomic_write_json(Path(out) / "build_info.json", info)
    typer.echo(f"wrote {out} in {time.perf_counter() - t0:.0f}s")


def main() -> None:
    typer.run(build)


if __name__ == "__main__":
    main()
