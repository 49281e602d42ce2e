"""Ours (the ``hf`` backend) vs a naive one-prompt-at-a-time ``model.generate``, same run.

    nice -n 5 python bench/generation.py [--prompts 128] [--n 4] [--threads 1] [--model DIR]

Same model (default: the shipped arith reference policy), same arith test prompts, in one
process, alternating nothing else. Two settings:
- greedy, one completion per prompt: ours batched (left padding, KV cache, rows leave the
  batch when they end) vs ``generate(do_sample=False)`` per prompt; also checks the texts match;
- sampling, ``--n`` completions per prompt at temperature 1: ours (prompt encoded once, cache
  shared by the n samples) vs ``generate(do_sample=True, num_return_sequences=n)`` per prompt.
Prints generated tokens/s for each and the ratio ours / naive. Not covered: vLLM (it has its own
benchmark when installed), GPUs.
"""

from __future__ import annotations

import argparse
import time

import torch

from dapo_bench.arith import PROMPT_TEMPLATE, make_split
from dapo_bench.generation.base import SamplingParams
from dapo_bench.generation.hf import HFGenerator


def naive(gen: HFGenerator, prompts: list[str], n: int, max_new: int, sample: bool):
    """One prompt at a time through ``model.generate``; returns (texts, generated tokens)."""
    tok, model = gen.tokenizer, gen.model
    texts, n_tok = [], 0
    torch.manual_seed(0)
    for p in prompts:
        enc = tok(p, return_tensors="pt")
        out = model.generate(
            **enc,
            max_new_tokens=max_new,
            do_sample=sample,
            temperature=1.0 if sample else None,
            top_p=1.0 if sample else None,
            top_k=0 if sample else None,
            num_return_sequences=n,
            pad_token_id=tok.pad_token_id,
        )
        for row in out[:, enc["input_ids"].shape[1] :].tolist():
            if tok.eos_token_id in row:
                row = row[: row.index(tok.eos_token_id) + 1]
            n_tok += len(row)
            texts.append(tok.decode(row, skip_special_tokens=True))
    return texts, n_tok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="model dir (default: shipped arith-ref)")
    ap.add_argument("--prompts", type=int, default=128)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.model is None:
        from dapo_bench.toy import default_model_path

        args.model = default_model_path()
    gen = HFGenerator(args.model, batch_size=args.batch_size)
    rows = make_split("test", args.prompts)
    prompts = [PROMPT_TEMPLATE.format(question=r["question"]) for r in rows]
    gen.generate(prompts[:4], SamplingParams(max_new_tokens=8))  # warm-up, untimed
    print(
        f"model {args.model} ({gen.n_params:,} params), {len(prompts)} prompts, "
        f"threads {args.threads}, batch {args.batch_size}; machine shared, compare ratios"
    )
    settings = [
        ("greedy n=1", 1, SamplingParams(max_new_tokens=args.max_new_tokens)),
        (
            f"sample n={args.n}",
            args.n,
            SamplingParams(n=args.n, temperature=1.0, max_new_tokens=args.max_new_tokens, seed=0),
        ),
    ]
    for name, n, params in settings:
        t0 = time.perf_counter()
        ours = gen.generate(prompts, params)
        t_ours = time.perf_counter() - t0
        tok_ours = sum(c.n_tokens for comps in ours for c in comps)
        t0 = time.perf_counter()
        ref_texts, tok_ref = naive(gen, prompts, n, args.max_new_tokens, params.temperature > 0)
        t_ref = time.perf_counter() - t0
        r_ours, r_ref = tok_ours / t_ours, tok_ref / t_ref
        line = (
            f"{name:12s} ours {tok_ours:7d} tok {t_ours:7.2f}s {r_ours:9.0f} tok/s | "
            f"naive generate {tok_ref:7d} tok {t_ref:7.2f}s {r_ref:9.0f} tok/s | "
            f"ratio {r_ours / r_ref:5.2f}x"
        )
        if n == 1:
            same = sum(c[0].text == t for c, t in zip(ours, ref_texts))
            line += f" | same texts {same}/{len(prompts)}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
