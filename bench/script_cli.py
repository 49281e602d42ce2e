"""What the bench scripts' command lines share: which model ``--model`` names, a parser of the
common knobs, and the CLI's handling of a user error.

- ``model_path(name)``: ``smollm2`` -> SmolLM2-135M-Instruct, dequantised
  (``dapo_bench.models.smollm2_dir``); ``arith-ref`` -> the shipped arith policy; else a dir.
- ``parse_model_args(doc, model, **ints)``: ``--model`` (default ``model``), one integer
  option per keyword (``max_new_tokens=96`` -> ``--max-new-tokens 96``) and ``--threads``;
  sets torch's threads and returns the namespace with ``model`` resolved to a path.
- ``run_main(main)``: ``typer.run(main)``, a :class:`dapo_bench.errors.UserError` printed as
  one line with exit status 2, as ``dapo-bench`` does.

Not covered: options other than integers (a script with more adds them to its own parser).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


def model_path(name: str) -> str:
    if name == "smollm2":
        from dapo_bench.models import smollm2_dir

        return str(smollm2_dir())
    if name == "arith-ref":
        from dapo_bench.toy import default_model_path

        return str(default_model_path())
    return name


def parse_model_args(doc: str, model: str, **ints: int) -> argparse.Namespace:
    import torch

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--model", default=model, help=f"smollm2 | arith-ref | a model dir "
                                                   f"(default: {model})")
    for name, default in ints.items():
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    args.model = model_path(args.model)
    return args


def run_main(main: Callable[..., object]) -> None:
    import typer

    from dapo_bench.errors import UserError

    try:
        typer.run(main)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
