"""Summed log-probs, response masks and the torch engine on a tiny in-process model."""

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from dapo_bench.errors import UserError
from dapo_bench.models import load_policy, save_policy
from dapo_bench.training.batches import (
    encode_pairs,
    masked_lm_loss,
    pack_pairs,
    sequence_logprobs,
    token_logprobs,
)
from dapo_bench.training.engine import EngineConfig, OptimConfig, make_engine


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    vocab = {c: i for i, c in enumerate(["<pad>", "<eos>"] + list("0123456789+-*=\n"))}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tk.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>")
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2)
    return LlamaForCausalLM(cfg).eval(), tok


def test_sequence_logprob_is_sum_of_response_tokens(tiny):
    model, tok = tiny
    batch = encode_pairs(tok, ["1+2=", "33*3="], ["3\n", "99\n"], add_eos=True)
    assert batch.response_mask.sum(1).tolist() == [3, 4]  # "3", "\n", eos / "9", "9", "\n", eos
    with torch.no_grad():
        got = sequence_logprobs(model, batch)
        ids = tok("1+2=3\n")["input_ids"] + [tok.eos_token_id]
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0], -1)
        want = sum(logp[i - 1, ids[i]] for i in range(4, len(ids)))
    assert torch.allclose(got[0], want, atol=1e-5)
    # padding in a batch does not change a row's value
    with torch.no_grad():
        alone = sequence_logprobs(model, encode_pairs(tok, ["1+2="], ["3\n"], add_eos=True))
    assert torch.allclose(got[0], alone[0], atol=1e-5)


class _NoKeep(torch.nn.Module):
    """The same model behind a forward without ``logits_to_keep`` (every position's logits)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask)


def test_token_logprobs_score_only_the_response_columns_and_match_log_softmax(tiny):
    model, _ = tiny
    torch.manual_seed(1)
    # contexts of 9 and 3 tokens: the response columns start at 3, the scored logits at 2
    ctx, resp = [[3, 4, 5, 6, 7, 8, 9, 10, 11], [5, 6, 7]], [[12, 13, 1], [4, 4, 4, 4, 1]]
    batch = pack_pairs(ctx, resp, pad_id=0, max_length=64)
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    want = torch.zeros(batch.input_ids.shape)
    want[:, 1:] = torch.log_softmax(logits[:, :-1], -1).gather(
        2, batch.input_ids[:, 1:, None])[..., 0]
    want = want * batch.response_mask
    grads = []
    for m in (model, _NoKeep(model)):
        got = token_logprobs(m, batch)
        assert got.shape == batch.input_ids.shape
        assert torch.allclose(got, want, atol=1e-5)
        assert (got[batch.response_mask == 0] == 0).all()
        model.zero_grad()
        got.sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    model.zero_grad()
    want.sum().backward()
    full = torch.cat([p.grad.flatten() for p in model.parameters()])
    for g in grads:
        assert torch.allclose(g, full, atol=1e-5)
    model.zero_grad()


def test_engine_lowers_sft_loss_and_roundtrips(tiny, tmp_path):
    model, tok = tiny
    batch = encode_pairs(tok, ["1+2="] * 4, ["3\n"] * 4, add_eos=True)
    engine = make_engine(model, OptimConfig(lr=1e-2))
    first = float(masked_lm_loss(model, batch))
    for _ in range(10):
        engine.step(masked_lm_loss(model, batch))
    assert float(masked_lm_loss(model, batch)) < first * 0.7
    out = save_policy(model, tok, tmp_path / "m")
    model2, tok2 = load_policy(out)
    assert tok2.padding_side == "left"
    with torch.no_grad():
        assert torch.allclose(sequence_logprobs(model2, batch), sequence_logprobs(model, batch))


def test_bad_paths_and_engine_names(tmp_path):
    with pytest.raises(UserError, match="not a model directory"):
        load_policy(tmp_path)
    with pytest.raises(ValueError, match="deepspeed: expected"):
        EngineConfig(deepspeed="zero9")
