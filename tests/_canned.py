"""Generators that answer each prompt with a given text, no model: what scores through a task
is then exactly the text the test chose (eval, the verifiers' paths, the training reward)."""

from dapo_bench.generation.base import Completion, Generator


class Canned:
    """A Generator answering every prompt with one fixed text (a reference solution)."""

    backend, model_path, tokenizer, n_params = "canned", "canned", None, 0

    def __init__(self, answers):
        self.answers = answers

    def generate(self, prompts, params):
        from dapo_bench.generation.base import Completion

        return [[Completion(self.answers[p], 1, "stop")] * params.n for p in prompts]


def _canned():
    from dapo_bench.generation.base import Generator

    return type("CannedGenerator", (Canned, Generator), {})


class Oracle(Generator):
    """Answers each prompt with a given text (``answers``: prompt -> text), reporting ``n_tokens``
    generated tokens per completion; counts the prompts it was asked."""

    backend, model_path, tokenizer, n_params = "oracle", "oracle", None, 0

    def __init__(self, answers, n_tokens=3):
        self.answers, self.n_tokens, self.asked = answers, n_tokens, 0

    def generate(self, prompts, params):
        self.asked += len(prompts)
        return [[Completion(self.answers[p], self.n_tokens, "stop")] * params.n for p in prompts]
