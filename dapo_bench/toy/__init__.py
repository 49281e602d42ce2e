"""The embedded toy: a character-level tokenizer, a tiny Llama, and the shipped reference
policy for the ``arith`` task (``default_model_path()``), rebuilt with
``python -m dapo_bench.toy.build_ref --out DIR``."""

from __future__ import annotations

from pathlib import Path

from dapo_bench.errors import UserError

ASSET_DIR = Path(__file__).resolve().parent.parent / "assets" / "arith-ref"


def default_model_path() -> str:
    """The shipped arith reference policy (a transformers model directory with its tokenizer)."""
    if not (ASSET_DIR / "config.json").is_file():
        raise UserError(
            f"{ASSET_DIR}: the shipped arith reference policy is missing; rebuild it with "
            f"`python -m dapo_bench.toy.build_ref --out {ASSET_DIR}`"
        )
    return str(ASSET_DIR)
