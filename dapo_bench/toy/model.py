"""The tiny Llama used as the toy reference policy (and in tests).

``LlamaForCausalLM`` with d=128, 4 layers, 4 heads, FFN 256 over the character tokenizer
(100 tokens): 0.68M parameters with UNTIED input/output embeddings (vLLM's in-place weight
reload is exact only for untied ones). Tests build smaller ones with ``tiny_llama(d=32, ...)``.
Not covered: any other architecture; this is a toy for CPU runs, not a model to study.
"""

from __future__ import annotations

from typing import Any

import torch


def tiny_llama_config(
    tokenizer: Any,
    *,
    d: int = 128,
    layers: int = 4,
    heads: int = 4,
    ffn: int = 256,
    max_positions: int = 512,
):
    from transformers import LlamaConfig

    return LlamaConfig(  # type: ignore[call-arg]  # rope_theta goes through its **kwargs
        vocab_size=len(tokenizer),
        hidden_size=d,
        intermediate_size=ffn,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=False,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id,
        rope_theta=10000.0,
    )


def tiny_llama(tokenizer: Any, *, seed: int = 0, **config: Any):
    """A freshly initialised tiny ``LlamaForCausalLM`` (float32, eval mode), seeded."""
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    model = LlamaForCausalLM(tiny_llama_config(tokenizer, **config))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.eos_token_id
    return model.eval()
