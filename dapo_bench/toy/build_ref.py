"""Build the arith reference policy: SFT of the tiny Llama on the fixed ``sft`` split.

    python -m dapo_bench.toy.build_ref --out dapo_bench/assets/arith-ref    # ~75 min, 1 thread

Trains a freshly initialised (seeded) ``tiny_llama`` (default d=32, 4 layers, FFN 64: 47,648
parameters) on the first ``--sft-size`` problems of the ``sft`` split (default 80,000) for
``--epochs`` passes (12, batch 256, peak lr 3e-3, cosine to 5%), until it sits on a plateau:
the paper's regime, where more SFT buys little. Then it writes the model directory (config,
safetensors, tokenizer) and ``build_info.json`` beside it: the learning curve (quick evals on
``dev``), greedy accuracy on ``test`` and ``test_ood`` (overall and per number of steps), where
wrong answers first go wrong, and the plateau checks on copies (not saved):

- ``continuation`` (``--continuation-flops F``, default 6e11, the FLOP target of the toy
  comparison; the paper's regime): an equal-compute continuation, SFT on the gold solutions
  of the RL training problems (``rl_train``) for F FLOPs with the SFT control's settings
  (``training.control.CONTROL_LR`` / ``CONTROL_BATCH_SIZE``), and its paired-bootstrap gain on
  ``test`` and ``test_ood``. A reference in the paper's regime gains less than 1 point
  (``in_paper_regime``); a data-limited one gains many (the 36% reference shipped before, SFT
  on 1,500 problems: +44 points);
- ``plateau`` (``--plateau-epochs E``, default off): accuracy after E more SFT epochs on the
  same set.

The critics of the DAPO critic study are built by the same command with ``--d 64 --ffn 128``
(4x) and ``--d 128 --ffn 256`` (16x). ``--early-stop N`` ends training when the quick eval
(on the ``dev`` split, carved from the RL training problems, never on ``test``) has not
improved by ``--early-stop-delta`` for N evals.

Not covered: hyper-parameter search; the numbers it prints are for this seed and machine.
"""

from __future__ import annotations

import copy
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Optional

import torch
import typer

from dapo_bench.arith import PROMPT_TEMPLATE, is_correct, make_split
from dapo_bench.generation.base import Prompt, SamplingParams
from dapo_bench.generation.hf import HFGenerator
from dapo_bench.io import atomic_write_json, read_json
from dapo_bench.models import count_params, load_policy, save_policy
from dapo_bench.provenance import package_versions
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training.engine import OptimConfig
from dapo_bench.training.scope import Scope
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


def evaluate(model, tok, rows: list[dict], batch_size: int = 128, scores: dict | None = None
             ) -> dict:
    """Greedy accuracy on ``rows`` (overall, per n_steps) and where wrong answers go wrong;
    ``scores`` (a dict) receives each problem's 1.0/0.0 by id (for paired comparisons)."""
    gen = HFGenerator.from_model(model, tok, batch_size=batch_size)
    prompts: list[Prompt] = [PROMPT_TEMPLATE.format(question=r["question"]) for r in rows]
    outs = gen.generate(prompts, SamplingParams(max_new_tokens=MAX_NEW_TOKENS))
    ok = [is_correct(o[0].text, r["answer"]) for o, r in zip(outs, rows)]
    if scores is not None:
        scores.update({r["id"]: float(c) for r, c in zip(rows, ok)})
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


def _stalled(curve: list[dict], patience: int, delta: float) -> bool:
    """True when the last ``patience`` dev evals improved on the best before them by less than
    ``delta``."""
    if len(curve) <= patience:
        return False
    best_before = max(c["dev_acc"] for c in curve[:-patience])
    return max(c["dev_acc"] for c in curve[-patience:]) < best_before + delta


def continuation_check(model, tok, flops: float, seed: int, n_eval: int | None = None) -> dict:
    """An equal-compute continuation of SFT on the RL training problems' gold solutions (the
    SFT control's settings), on a copy: its FLOPs, steps, epochs and paired gains on the
    first ``n_eval`` (default: all) problems of ``test`` and ``test_ood``."""
    from dapo_bench.eval.metrics import paired_bootstrap
    from dapo_bench.ledger import Ledger
    from dapo_bench.training import budget
    from dapo_bench.training.control import CONTROL_BATCH_SIZE, CONTROL_LR
    before: dict[str, dict] = {"test": {}, "test_ood": {}}
    after: dict[str, dict] = {"test": {}, "test_ood": {}}
    for split, sc in before.items():
        evaluate(model, tok, make_split(split, n_eval), scores=sc)
    more = copy.deepcopy(model)
    led = Ledger(n_params=count_params(model), budget_flops=flops)
    cfg = SFTConfig(epochs=budget.epochs(led, 1.0), batch_size=CONTROL_BATCH_SIZE,
                    seed=seed + 2000, log_every=10**9, optim=OptimConfig(lr=CONTROL_LR))
    st = train_sft(more, tok, sft_rows(tok, sft_pairs(make_split("rl_train"))), cfg,
                   scope=Scope("sft", led))
    out: dict[str, Any] = {"flops": led.total_flops, "target_flops": flops, "steps": st.steps,
           "epochs": round(st.epochs, 3), "lr": CONTROL_LR,
           "batch_size": CONTROL_BATCH_SIZE}
    for split, sc in after.items():
        evaluate(more, tok, make_split(split, n_eval), scores=sc)
        g = paired_bootstrap(before[split], sc)
        out[split] = {"before": g["a"], "after": g["b"], "gain": g["diff"],
                      "stderr": g["stderr"], "ci95": g["ci95"]}
    out["in_paper_regime"] = out["test"]["gain"] < 0.01
    typer.echo(f"continuation check: {out}")
    return out


def build(
    out: Annotated[Path, typer.Option(help="Directory to write the model to (replaced).")],
    epochs: Annotated[int, typer.Option(help="SFT passes over the sft split.")] = 12,
    lr: Annotated[float, typer.Option(help="Peak AdamW learning rate.")] = 3e-3,
    batch_size: Annotated[int, typer.Option(help="Pairs per optimizer step.")] = 256,
    sft_size: Annotated[int, typer.Option(help="Problems of the sft split to train on.")] = 80000,
    eval_every: Annotated[int, typer.Option(help="Epochs between quick evals (0: none).")] = 1,
    eval_n: Annotated[int, typer.Option(help="Dev problems in each quick eval.")] = 500,
    plateau_epochs: Annotated[
        float, typer.Option(help="Extra SFT epochs on the sft split (0: no such check).")
    ] = 0.0,
    plateau_lr: Annotated[
        Optional[list[float]],  # noqa: UP045 (typer needs Optional)
        typer.Option(help="Learning rate(s) of the plateau check [default: 1e-4 and 5e-4]."),
    ] = None,
    continuation_flops: Annotated[
        float, typer.Option(help="FLOPs of the equal-compute continuation check on rl_train's "
                                 "gold solutions (0: skip).")
    ] = 6e11,
    early_stop: Annotated[
        int, typer.Option(help="Stop after this many quick evals on dev without improvement "
                               "(0: train all --epochs).")
    ] = 0,
    early_stop_delta: Annotated[
        float, typer.Option(help="Improvement (accuracy fraction) that resets --early-stop.")
    ] = 0.005,
    check_only: Annotated[
        bool, typer.Option(help="Skip training: re-evaluate the model in --out, redo the checks.")
    ] = False,
    d: Annotated[int, typer.Option(help="Hidden size of the tiny Llama.")] = 32,
    layers: Annotated[int, typer.Option(help="Transformer layers.")] = 4,
    heads: Annotated[int, typer.Option(help="Attention heads.")] = 4,
    ffn: Annotated[int, typer.Option(help="MLP hidden size.")] = 64,
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
        if continuation_flops:
            info["continuation"] = continuation_check(model, tok, continuation_flops, seed)
        atomic_write_json(Path(out) / "build_info.json", info)
        return
    tok = build_char_tokenizer()
    arch = {"d": d, "layers": layers, "heads": heads, "ffn": ffn}
    model = tiny_llama(tok, seed=seed, **arch)
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
    dev = make_split("dev", eval_n)  # quick evals and early stopping: dev, never test

    def on_epoch(epoch: int, st) -> bool:
        if eval_every and (epoch % eval_every == 0 or epoch == epochs):
            acc = evaluate(model, tok, dev)["accuracy"]
            curve.append({"epoch": epoch, "step": st.steps, "loss": st.loss, "dev_acc": acc})
            typer.echo(f"epoch {epoch} step {st.steps} loss {st.loss:.4f} dev@{eval_n} {acc:.3f}")
            return early_stop > 0 and _stalled(curve, early_stop, early_stop_delta)
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
    cont = continuation_check(model, tok, continuation_flops, seed) if continuation_flops else None
    info = {
        "command": "python -m dapo_bench.toy.build_ref " + " ".join(sys.argv[1:]),
        "n_params": count_params(model),
        "arch": arch,
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
        "continuation": cont,
        "stopped": stats.stopped or "epochs",
        "versions": package_versions(),
    }
    atomic_write_json(Path(out) / "build_info.json", info)
    typer.echo(f"wrote {out} in {time.perf_counter() - t0:.0f}s")


def main() -> None:
    typer.run(build)


if __name__ == "__main__":
    main()
