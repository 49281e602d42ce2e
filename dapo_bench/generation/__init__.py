"""Text generation behind one interface; backends: ``hf`` (transformers, CPU) and ``vllm``."""

from dapo_bench.generation.base import (
    GENERATORS,
    Completion,
    Generator,
    SamplingParams,
    load_generator,
)

__all__ = ["GENERATORS", "Completion", "Generator", "SamplingParams", "load_generator"]
