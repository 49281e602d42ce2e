"""Text generation behind one interface; backends: ``hf`` (transformers, CPU), ``vllm``, and
``openai`` (a model served behind the OpenAI protocol, over HTTP)."""

from dapo_bench.generation.base import (
    GENERATORS,
    Completion,
    Generator,
    SamplingParams,
    load_generator,
)

__all__ = ["GENERATORS", "Completion", "Generator", "SamplingParams", "load_generator"]
