"""Token-id (context, response) batches and the per-token quantities every loss is built from.

``pack_pairs`` right-pads context + response ids with a mask of the response tokens: token ids
in, token ids trained on (what was sampled is what is scored; nothing is re-tokenised). Over
``max_length`` the context loses its START (the response, and the end of the context it hangs
on, are kept); a response that alone does not fit keeps one context token and loses its tail.
Both cases are counted in the batch (``context_cut``, ``response_cut``) for the run's report.
``encode_pairs`` is the same for text that was not sampled (gold solutions, tests): the prompt
through ``models.encode_prompt``, the response tokenised on its own (+ EOS where asked).

``token_logprobs`` gives log pi(token | prefix) on the response, ``sequence_logprobs`` their SUM
(log pi(response | context)), ``masked_lm_loss`` the SFT cross-entropy on response tokens.

Not covered: packing several pairs into one row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F


@dataclass
class PairBatch:
    """Right-padded (context + response) ids; ``response_mask`` marks response tokens."""

    input_ids: torch.Tensor  # [B, L]
    attention_mask: torch.Tensor  # [B, L]
    response_mask: torch.Tensor  # [B, L], 1 where the token belongs to the response
    context_cut: int = 0  # rows whose context lost its start to max_length
    response_cut: int = 0  # rows whose response lost its tail to max_length

    @property
    def n_tokens(self) -> int:
        """Tokens a forward pass processes (what the compute ledger counts)."""
        return int(self.attention_mask.sum())

    @property
    def cuts(self) -> dict[str, int]:
        return {"rows": int(self.input_ids.size(0)), "context_cut": self.context_cut,
                "response_cut": self.response_cut}

    def rows(self, idx: Sequence[int]) -> PairBatch:
        i = torch.as_tensor(list(idx), dtype=torch.long)
        return PairBatch(self.input_ids[i], self.attention_mask[i], self.response_mask[i])

    def to(self, device: Any) -> PairBatch:
        if self.input_ids.device == torch.device(device):
            return self
        return PairBatch(self.input_ids.to(device), self.attention_mask.to(device),
                         self.response_mask.to(device), self.context_cut, self.response_cut)


def pack_pairs(contexts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]], *,
               pad_id: int, max_length: int) -> PairBatch:
    """One batch of ``context + response`` ids (see the module doc for ``max_length``)."""
    if max_length < 2:
        raise ValueError(f"max_length must be >= 2, got {max_length}")
    rows, n_ctx, ctx_cut, resp_cut = [], [], 0, 0
    for c, r in zip(contexts, responses):
        c, r = list(c), list(r)
        if len(c) + len(r) > max_length:
            if len(r) > max_length - 1:
                r, resp_cut = r[: max_length - 1], resp_cut + 1
            keep = max_length - len(r)
            ctx_cut += len(c) > keep
            c = c[len(c) - keep :]
        rows.append(c + r)
        n_ctx.append(len(c))
    width = max(len(x) for x in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    resp = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (ids, k) in enumerate(zip(rows, n_ctx)):
        input_ids[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        attn[i, : len(ids)] = 1
        resp[i, k : len(ids)] = 1
    return PairBatch(input_ids, attn, resp, ctx_cut, resp_cut)


def response_ids(tokenizer: Any, text: str, eos: bool) -> list[int]:
    """A text response's own ids (no special tokens), with EOS appended when ``eos``."""
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    return ids + [tokenizer.eos_token_id] if eos else ids


def encode_pairs(
    tokenizer: Any,
    prompts: Sequence[str],
    responses: Sequence[str],
    *,
    max_length: int = 1024,
    add_eos: Sequence[bool] | bool = False,
) -> PairBatch:
    """``pack_pairs`` of text (prompt through ``encode_prompt``; for text not sampled)."""
    from dapo_bench.models import encode_prompt

    if isinstance(add_eos, bool):
        add_eos = [add_eos] * len(prompts)
    return pack_pairs([encode_prompt(tokenizer, p) for p in prompts],
                      [response_ids(tokenizer, r, e) for r, e in zip(responses, add_eos)],
                      pad_id=tokenizer.pad_token_id, max_length=max_length)


def token_logprobs(model: Any, batch: PairBatch) -> torch.Tensor:
    """Log-prob of each token given its prefix, [B, L] (position 0 gets 0); masked by response.

    Only the columns from the first response token on are scored: the model's output layer runs
    on those positions alone where its forward takes ``logits_to_keep`` (transformers' causal
    LMs), and each row's log-prob is its logit minus the row's logsumexp, so no [B, L, vocab]
    log-softmax is ever held beside the logits (the actor's and PPO's memory peak)."""
    n = batch.input_ids.size(1)
    cols = batch.response_mask.any(dim=0).nonzero()
    first = max(1, int(cols[0]) if len(cols) else n - 1)
    keeps = getattr(model, "_supports_logits_to_keep", None)  # transformers' own test for it
    kwargs = {"logits_to_keep": n - first + 1} if keeps and keeps() else {}
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, **kwargs).logits
    logits = logits[:, logits.size(1) - (n - first) - 1 : -1]  # the positions first-1 .. n-2
    target = batch.input_ids[:, first:]
    tok = torch.stack([_picked_logprobs(logits[i], target[i]) for i in range(logits.size(0))])
    out = torch.zeros(batch.input_ids.shape, dtype=tok.dtype, device=tok.device)
    out[:, first:] = tok
    return out * batch.response_mask


def _picked_logprobs(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """log softmax(logits)[target] of one row, [T] (float32; one row's logsumexp at a time)."""
    lg = logits.float()
    return lg.gather(-1, target.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(lg, dim=-1)


def sequence_logprobs(model: Any, batch: PairBatch) -> torch.Tensor:
    """log pi(response | prompt): the SUM of the response's token log-probs, [B]."""
    return token_logprobs(model, batch).sum(dim=1)


def masked_lm_loss(model: Any, batch: PairBatch) -> torch.Tensor:
    """Mean next-token cross-entropy over response tokens (the SFT loss)."""
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    target = batch.input_ids[:, 1:].masked_fill(batch.response_mask[:, 1:] == 0, -100)
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)).float(), target.reshape(-1))


def predicted_tokens(batch: PairBatch) -> int:
    """Response tokens a next-token loss predicts (the denominator of ``masked_lm_loss``)."""
    return int(batch.response_mask[:, 1:].sum())
