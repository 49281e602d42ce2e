"""The hf generation backend against transformers' own generate() and a manual forward.

Tiny random Llamas (built in-process, saved to a temp dir) over the character tokenizer.
"""

from __future__ import annotations

import math
import random

import pytest
import torch

from dapo_bench.errors import UserError
from dapo_bench.generation.base import GENERATORS, SamplingParams
from dapo_bench.generation.hf import PAD_FILL, HFGenerator, length_groups
from dapo_bench.models import save_policy
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer

PROMPTS = ["12+3\n", "((5*2)-3)+1\n", "7\n", "abc", "(((99-1)*1)+1)-50\n", "hello world\n", "x"]
SMALL = {"d": 32, "layers": 2, "heads": 2, "ffn": 64}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    tok = build_char_tokenizer()
    path = tmp_path_factory.mktemp("tiny") / "m"
    save_policy(tiny_llama(tok, seed=0, **SMALL), tok, path)
    return path


@pytest.fixture(scope="module")
def gen(model_dir):
    torch.set_num_threads(1)
    return HFGenerator(str(model_dir), batch_size=3)


def manual_logprobs(gen, prompt: str, token_ids: list[int]) -> list[float]:
    ids = gen.tokenizer(prompt)["input_ids"]
    x = torch.tensor([ids + token_ids])
    with torch.no_grad():
        logp = torch.log_softmax(gen.model(input_ids=x).logits[0].float(), dim=-1)
    return [float(logp[len(ids) - 1 + k, t]) for k, t in enumerate(token_ids)]


def test_registered_as_hf():
    assert GENERATORS.entry("hf").obj is HFGenerator


def test_greedy_batched_equals_unbatched_generate(gen):
    out = gen.generate(PROMPTS, SamplingParams(max_new_tokens=24))
    assert len(out) == len(PROMPTS)
    for prompt, comps in zip(PROMPTS, out):
        enc = gen.tokenizer(prompt, return_tensors="pt")
        ref = gen.model.generate(**enc, max_new_tokens=24, do_sample=False)
        ref_ids = ref[0, enc["input_ids"].shape[1] :].tolist()
        eos = gen.tokenizer.eos_token_id
        if eos in ref_ids:
            ref_ids = ref_ids[: ref_ids.index(eos) + 1]
        assert comps[0].token_ids == ref_ids
        assert comps[0].n_tokens == len(ref_ids)
        assert comps[0].text == gen.tokenizer.decode(ref_ids, skip_special_tokens=True)
        assert comps[0].finish_reason == ("stop" if ref_ids[-1] == eos else "length")
    assert gen.last_prompt_tokens == sum(len(gen.tokenizer(p)["input_ids"]) for p in PROMPTS)
    assert gen.last_generated_tokens == sum(c[0].n_tokens for c in out)


def test_length_groups_bound_padding_and_size():
    assert length_groups([100, 90, 80, 76, 74, 60, 10], 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert length_groups([100, 74], 8) == [[0], [1]]  # under 3/4 of the longest: its own group
    assert length_groups([], 4) == []
    rng = random.Random(0)
    lengths = sorted((rng.randint(20, 700) for _ in range(300)), reverse=True)
    groups = length_groups(lengths, 64)
    assert [k for g in groups for k in g] == list(range(300))
    for g in groups:
        assert len(g) <= 64 and lengths[g[-1]] >= PAD_FILL * lengths[g[0]]
    assert len(groups) <= 300 // 64 + 1 + math.ceil(math.log(700 / 20) / math.log(1 / PAD_FILL))


def test_greedy_independent_of_batch_size(model_dir, gen):
    a = gen.generate(PROMPTS, SamplingParams(max_new_tokens=16))
    b = HFGenerator(str(model_dir), batch_size=64).generate(
        PROMPTS, SamplingParams(max_new_tokens=16)
    )
    assert [c[0].text for c in a] == [c[0].text for c in b]


def test_stop_string_truncates_and_stops_early(gen):
    base = gen.generate(PROMPTS[:2], SamplingParams(max_new_tokens=24))
    # A stop string taken from the middle of each free-running text.
    for prompt, comps in zip(PROMPTS[:2], base):
        text = comps[0].text
        assert len(text) >= 6
        stop = text[3:5]
        cut = text.find(stop)
        got = gen.generate([prompt], SamplingParams(max_new_tokens=24, stop=(stop,)))[0][0]
        assert got.text == text[:cut]
        assert got.finish_reason == "stop"
        # Generation stopped at the token that completed the stop string.
        decode = gen.tokenizer.decode
        first = min(k for k in range(1, 25) if stop in decode(comps[0].token_ids[:k]))
        assert got.n_tokens == first
        assert got.token_ids == comps[0].token_ids[: got.n_tokens]


def test_max_new_tokens_zero_and_bad_params(gen):
    out = gen.generate(["1+1\n"], SamplingParams(max_new_tokens=0, n=2))
    assert [(c.text, c.n_tokens, c.finish_reason) for c in out[0]] == [("", 0, "length")] * 2
    # settings no backend can honour are refused when made, before any backend sees them
    for bad in ({"n": 0}, {"temperature": -1.0}, {"top_p": 0.0}, {"max_new_tokens": -1}):
        with pytest.raises(UserError, match=f"sampling: {next(iter(bad))} must be"):
            SamplingParams(**bad)


def test_n_samples_share_prefix_seeded_and_valid(model_dir, gen):
    params = SamplingParams(n=5, temperature=1.0, max_new_tokens=12, seed=7, logprobs=True)
    out = gen.generate(PROMPTS[:3], params)
    assert [len(c) for c in out] == [5, 5, 5]
    # The prefix is encoded once per prompt, not once per sample.
    assert gen.last_prompt_tokens == sum(len(gen.tokenizer(p)["input_ids"]) for p in PROMPTS[:3])
    texts = [[c.text for c in comps] for comps in out]
    assert len(set(texts[0])) > 1  # samples differ
    # Same seed, same texts, even with other batch companions, order and batch size.
    again = HFGenerator(str(model_dir), batch_size=64).generate(
        [PROMPTS[2], PROMPTS[5], PROMPTS[0]], params
    )
    assert [c.text for c in again[2]] == texts[0]
    assert [c.text for c in again[0]] == texts[2]
    other = gen.generate(PROMPTS[:3], SamplingParams(**{**params.__dict__, "seed": 8}))
    assert [[c.text for c in comps] for comps in other] != texts
    # Each sample from the expanded cache is scored exactly as a fresh forward scores it.
    for prompt, comps in zip(PROMPTS[:3], out):
        for c in comps:
            assert c.logprobs == pytest.approx(manual_logprobs(gen, prompt, c.token_ids), abs=1e-4)


def test_duplicate_prompts_get_independent_samples(gen):
    out = gen.generate(["5\n", "5\n"], SamplingParams(temperature=1.0, max_new_tokens=16, seed=1))
    assert out[0][0].text != out[1][0].text


def test_sampling_follows_the_model_distribution(gen):
    prompt = "3+4\n"
    ids = torch.tensor([gen.tokenizer(prompt)["input_ids"]])
    with torch.no_grad():
        probs = torch.softmax(gen.model(input_ids=ids).logits[0, -1].float(), dim=-1)
    n = 4000
    out = gen.generate([prompt], SamplingParams(n=n, temperature=1.0, max_new_tokens=1, seed=3))
    counts = torch.bincount(torch.tensor([c.token_ids[0] for c in out[0]]), minlength=len(probs))
    freq = counts.float() / n
    # Each token's frequency within 4.5 standard errors of its probability.
    se = (probs * (1 - probs) / n).sqrt()
    assert bool(((freq - probs).abs() <= 4.5 * se + 1e-3).all())
    # top_p keeps only the nucleus: the smallest top set whose mass reaches top_p.
    p_sorted, order = probs.sort(descending=True)
    nucleus = set(order[: int((p_sorted.cumsum(0) < 0.3).sum()) + 1].tolist())
    out = gen.generate(
        [prompt], SamplingParams(n=500, temperature=1.0, top_p=0.3, max_new_tokens=1, seed=3)
    )
    assert {c.token_ids[0] for c in out[0]} <= nucleus


def test_greedy_logprobs_match_manual_forward(gen):
    out = gen.generate(PROMPTS[:3], SamplingParams(max_new_tokens=10, logprobs=True))
    for prompt, comps in zip(PROMPTS[:3], out):
        c = comps[0]
        assert len(c.logprobs) == c.n_tokens
        assert c.logprobs == pytest.approx(manual_logprobs(gen, prompt, c.token_ids), abs=1e-4)
    assert gen.generate(["1\n"], SamplingParams(max_new_tokens=3))[0][0].logprobs is None


def test_update_weights_serves_the_new_model(tmp_path, model_dir):
    tok = build_char_tokenizer()
    other = tmp_path / "other"
    save_policy(tiny_llama(tok, seed=1, **SMALL), tok, other)
    g = HFGenerator(str(model_dir))
    expect = HFGenerator(str(other)).generate(PROMPTS, SamplingParams(max_new_tokens=10))
    before = g.generate(PROMPTS, SamplingParams(max_new_tokens=10))
    g.update_weights(str(other))
    after = g.generate(PROMPTS, SamplingParams(max_new_tokens=10))
    assert [c[0].text for c in after] == [c[0].text for c in expect]
    assert [c[0].text for c in after] != [c[0].text for c in before]
    assert g.n_params == sum(p.numel() for p in g.model.parameters())


def test_missing_model_dir_names_it(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(UserError, match="no-such-model"):
        HFGenerator(str(missing))
    with pytest.raises(UserError, match="dtype"):
        HFGenerator(str(missing), dtype="float64")
    with pytest.raises(UserError, match="threads"):
        HFGenerator(str(missing), threads=0)
