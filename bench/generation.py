"""Ours (the ``hf`` backend) vs transformers' own ``model.generate``, same model, same prompts.

    nice -n 10 python bench/generation.py [--model smollm2] [--task gsm8k] [--data-dir DIR]
        [--prompts 32] [--batch-size 16] [--n 4] [--max-new-tokens 128] [--threads 1] [--naive]
        [--only greedy|sample] [--skip 0] [--unbounded]

Default: SmolLM2-135M-Instruct (``dapo_bench.models.smollm2_dir``; ``--model arith-ref`` is the
shipped toy policy, or a model directory) on the first ``--prompts`` GSM8K test questions in the
model's chat template (``--task``; the prompts the eval builds). One process, one setting after
the other. Settings:
- greedy, one completion per prompt: ours (sorted by length, left-padded batches of
  ``--batch-size``, KV cache, ended rows leave the batch) vs ``generate(do_sample=False)`` on the
  same batches (left-padded, ``--batch-size`` prompts per call); also counts the prompts whose
  generated token ids are identical (EOS included, nothing after it);
- sampling, ``--n`` completions per prompt at temperature 1: ours (each prompt's prefill done
  once, its cache shared by the n samples) vs ``generate(do_sample=True,
  num_return_sequences=n)`` on ``--batch-size // n`` prompts per call (tokens/s only; the
  random streams differ);
- ``--naive``: also one prompt at a time through ``generate`` (the old baseline);
- ``--unbounded``: also ours with its padding bound off (``hf.PAD_FILL = 0``: groups cut by
  ``--batch-size`` alone, as before the bound), and the ratio of the two. ``--skip K`` takes
  the prompts from the K-th on (MATH500's problems 101-150 hold its two longest prompts).
Prints generated tokens per CPU-second of this process (one torch thread, so that is the
compute; on a shared machine the wall time swings with the load, also printed) for each, and
the ratio ours / generate. Not covered: vLLM (bench/generation_vllm.py), GPUs.
"""

from __future__ import annotations

import argparse
import time

import torch
from script_cli import model_path  # bench/, beside this script

from dapo_bench.generation import hf
from dapo_bench.generation.base import SamplingParams, encode_prompts
from dapo_bench.generation.hf import HFGenerator


def cut_at_eos(row: list[int], eos: set[int]) -> list[int]:
    for k, t in enumerate(row):
        if t in eos:
            return row[: k + 1]
    return row


def hf_generate(gen: HFGenerator, prompts, n: int, max_new: int, batch: int, sample: bool):
    """``model.generate`` on left-padded batches of ``batch`` prompts (in ``gen``'s sorted
    order); returns (generated ids per completion, in prompt order, and tokens generated)."""
    tok, model = gen.tokenizer, gen.model
    enc, _ = encode_prompts(tok, prompts)
    eos = set(gen._eos_ids())
    order = sorted(range(len(enc)), key=lambda i: -len(enc[i]))
    out_ids: list[list[list[int]]] = [[] for _ in enc]
    torch.manual_seed(0)
    for start in range(0, len(order), batch):
        idx = order[start : start + batch]
        width = max(len(enc[i]) for i in idx)
        ids = torch.full((len(idx), width), tok.pad_token_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, i in enumerate(idx):
            ids[r, width - len(enc[i]) :] = torch.tensor(enc[i])
            mask[r, width - len(enc[i]) :] = 1
        with torch.inference_mode():
            out = model.generate(
                input_ids=ids.to(model.device), attention_mask=mask.to(model.device),
                max_new_tokens=max_new, do_sample=sample, num_return_sequences=n,
                temperature=1.0 if sample else None, top_p=1.0 if sample else None,
                top_k=0 if sample else None, pad_token_id=tok.pad_token_id,
                eos_token_id=sorted(eos),
            )
        rows = out[:, width:].tolist()
        for r, i in enumerate(idx):
            out_ids[i] = [cut_at_eos(row, eos) for row in rows[r * n : (r + 1) * n]]
    return out_ids, sum(len(x) for comps in out_ids for x in comps)


def load_prompts(task_name: str, k: int, tokenizer, data_dir: str | None, skip: int = 0) -> list[str]:
    if task_name == "arith":
        from dapo_bench.arith import PROMPT_TEMPLATE, make_split

        rows = make_split("test", skip + k)[skip:]
        return [PROMPT_TEMPLATE.format(question=r["question"]) for r in rows]
    from dapo_bench.tasks.task import load_task

    task = load_task(task_name, data_dir=data_dir, limit=skip + k)
    return [task.prompt(p, tokenizer) for p in task.problems[skip:]]


def timed(fn, *a):
    """(result, wall seconds, CPU seconds of this process): on a shared machine the CPU time
    is what the work cost (one torch thread: it is the compute), the wall time what it took."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*a)
    return out, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2", help="smollm2 | arith-ref | a model dir")
    ap.add_argument("--task", default=None, help="prompts from this task (default: gsm8k, or "
                    "arith for arith-ref)")
    ap.add_argument("--data-dir", default=None, help="local benchmark files (DIR/math/...); "
                    "default: the task's own source (Hugging Face Hub)")
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--naive", action="store_true", help="also one prompt at a time")
    ap.add_argument("--only", choices=("greedy", "sample"), default=None, help="one setting")
    ap.add_argument("--skip", type=int, default=0, help="prompts from the K-th on")
    ap.add_argument("--unbounded", action="store_true", help="also ours without the padding bound")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.model == "arith-ref":
        args.task = args.task or "arith"
    args.model = model_path(args.model)
    gen = HFGenerator(args.model, batch_size=args.batch_size)
    prompts = load_prompts(args.task or "gsm8k", args.prompts, gen.tokenizer, args.data_dir,
                           args.skip)
    gen.generate(prompts[:2], SamplingParams(max_new_tokens=4))  # warm-up, untimed
    print(f"model {args.model} ({gen.n_params:,} params), {len(prompts)} {args.task or 'gsm8k'} "
          f"prompts, max_new_tokens {args.max_new_tokens}, threads {args.threads}, batch "
          f"{args.batch_size}; machine shared, compare ratios", flush=True)
    mnt = args.max_new_tokens
    settings = [("greedy n=1", 1, SamplingParams(max_new_tokens=mnt)),
                (f"sample n={args.n}", args.n,
                 SamplingParams(n=args.n, temperature=1.0, max_new_tokens=mnt, seed=0))]
    for name, n, params in settings:
        if args.only and not name.startswith(args.only):
            continue
        sample = params.temperature > 0
        ours, t_ours, c_ours = timed(gen.generate, prompts, params)
        tok_ours = sum(c.n_tokens for comps in ours for c in comps)
        (ref, tok_ref), t_ref, c_ref = timed(
            hf_generate, gen, prompts, n, mnt, max(1, args.batch_size // n), sample)
        r_ours, r_ref = tok_ours / c_ours, tok_ref / c_ref
        line = (f"{name:12s} ours {tok_ours:6d} tok {c_ours:7.1f} cpu-s ({t_ours:6.1f} wall) "
                f"{r_ours:7.1f} tok/cpu-s | generate (batched) {tok_ref:6d} tok {c_ref:7.1f} "
                f"cpu-s ({t_ref:6.1f} wall) {r_ref:7.1f} tok/cpu-s | ratio {r_ours / r_ref:5.2f}x")
        if n == 1:
            same = sum(c[0].token_ids == r[0] for c, r in zip(ours, ref))
            line += f" | identical ids {same}/{len(prompts)}"
        print(line, flush=True)
        if args.unbounded:
            bound, hf.PAD_FILL = hf.PAD_FILL, 0.0
            try:
                unb, t_unb, c_unb = timed(gen.generate, prompts, params)
            finally:
                hf.PAD_FILL = bound
            tok_unb = sum(c.n_tokens for comps in unb for c in comps)
            print(f"{'':12s} ours unbounded padding {tok_unb:6d} tok {c_unb:7.1f} cpu-s "
                  f"({t_unb:6.1f} wall) {tok_unb / c_unb:7.1f} tok/cpu-s | ratio bounded/unbounded "
                  f"{r_ours / (tok_unb / c_unb):5.2f}x", flush=True)
        if args.naive:
            (_, tok_nv), t_nv, c_nv = timed(hf_generate, gen, prompts, n, mnt, 1, sample)
            print(f"{'':12s} naive generate (1 prompt a call) {tok_nv:6d} tok {c_nv:7.1f} cpu-s "
                  f"({t_nv:6.1f} wall) {tok_nv / c_nv:7.1f} tok/cpu-s | ratio ours/naive "
                  f"{r_ours / (tok_nv / c_nv):5.2f}x", flush=True)


if __name__ == "__main__":
    main()
