"""Fixtures shared by several test modules."""

import pytest


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A saved random-init 2-layer character-level Llama (seed 5): a policy dir for runs."""
    from dapo_bench.toy.model import tiny_llama
    from dapo_bench.toy.tokenizer import build_char_tokenizer

    d = tmp_path_factory.mktemp("tiny") / "policy"
    tok = build_char_tokenizer()
    tiny_llama(tok, d=32, layers=2, heads=2, ffn=64, seed=5).save_pretrained(d)
    tok.save_pretrained(d)
    return str(d)
