"""Throughput of ``--backend openai`` with 1 request in flight against 8, on one server.

    transformers serve MODEL --host 127.0.0.1 --port 8000 --device cpu &   # or vllm serve ...
    python bench/openai_concurrency.py --base-url http://127.0.0.1:8000/v1 --task gsm8k \\
        --data-dir ../shared/data --problems 16 --max-new-tokens 64

Rounds alternate (1, 8, 1, 8, ...) on the same prompts, so that a change of the machine's load
hits both settings alike; each round is the backend's own ``generate`` (the eval's path) over
``--problems`` distinct prompts, greedy, each prompt with a seed of its round so that no server
cache answers a repeat. It prints each round's generated tokens per second (the server's
``usage.completion_tokens``) and the ratio of the medians: the peer is 1 request in flight.

What it does not show: a server that runs one request at a time (``transformers serve``
without ``--continuous-batching``) gains only the overlap of HTTP and queueing; a batching
server (vLLM, SGLang, ``--continuous-batching``) is where more in flight pays.
"""

from __future__ import annotations

import statistics
import time
from typing import Annotated

import typer


def main(
    base_url: Annotated[str, typer.Option("--base-url")],
    model: Annotated[str | None, typer.Option("--model")] = None,
    task: Annotated[str, typer.Option("--task")] = "gsm8k",
    api: Annotated[str, typer.Option("--api")] = "chat",
    tokenizer: Annotated[str | None, typer.Option("--tokenizer")] = None,
    data_dir: Annotated[str | None, typer.Option("--data-dir")] = None,
    problems: Annotated[int, typer.Option("--problems")] = 16,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens")] = 64,
    rounds: Annotated[int, typer.Option("--rounds", help="rounds per setting")] = 2,
    many: Annotated[int, typer.Option("--many", help="the requests in flight compared")] = 8,
) -> None:
    from dapo_bench.generation.base import SamplingParams, load_generator
    from dapo_bench.tasks import load_task

    t = load_task(task, data_dir=data_dir, limit=problems)
    rates: dict[int, list[float]] = {1: [], many: []}
    for r in range(rounds):
        for c in (1, many):
            gen = load_generator("openai", model, base_url=base_url, api=api,
                                 tokenizer=tokenizer, concurrency=c)
            prompts = [t.messages(p) if gen.prompt_format == "messages"
                       else t.prompt(p, gen.tokenizer) for p in t.problems]
            params = SamplingParams(max_new_tokens=max_new_tokens, seed=r)
            t0 = time.perf_counter()
            out = gen.generate(prompts, params)
            secs = time.perf_counter() - t0
            tokens = sum(c.n_tokens for cs in out for c in cs)
            gen.close()
            rates[c].append(tokens / secs)
            print(f"round {r}: {c} in flight: {len(prompts)} requests, {tokens} tokens in "
                  f"{secs:.1f}s = {tokens / secs:.2f} tokens/s", flush=True)
    one, more = statistics.median(rates[1]), statistics.median(rates[many])
    print(f"median tokens/s: 1 in flight {one:.2f}, {many} in flight {more:.2f}; "
          f"ratio {more / one:.2f}x")


if __name__ == "__main__":
    typer.run(main)
