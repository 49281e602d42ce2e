"""Tokenised (prompt, response) batches and the per-token quantities every loss is built from.

``encode_pairs`` right-pads prompt + response ids with a mask of the response tokens;
``token_logprobs`` gives log pi(token | prefix) on the response, ``sequence_logprobs`` their SUM
(log pi(response | prompt)), ``masked_lm_loss`` the SFT cross-entropy on response tokens.

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
    """Right-padded (prompt + response) ids; ``response_mask`` marks response tokens."""

    input_ids: torch.Tensor  # [B, L]
    attention_mask: torch.Tensor  # [B, L]
    response_mask: torch.Tensor  # [B, L], 1 where the token belongs to the response

    @property
    def n_tokens(self) -> int:
        """Tokens a forward pass processes (what the compute ledger counts)."""
        return int(self.attention_mask.sum())

    def rows(self, idx: Sequence[int]) -> PairBatch:
        i = torch.as_tensor(list(idx), dtype=torch.long)
        return PairBatch(self.input_ids[i], self.attention_mask[i], self.response_mask[i])

    def to(self, device: Any) -> PairBatch:
        if self.input_ids.device == torch.device(device):
            return self
        return PairBatch(*(t.to(device) for t in (self.input_ids, self.attention_mask,
                                                   self.response_mask)))


def encode_pairs(
    tokenizer: Any,
    prompts: Sequence[str],
    responses: Sequence[str],
    *,
    max_length: int = 1024,
    add_eos: Sequence[bool] | bool = False,
) -> PairBatch:
    """Tokenise prompt and response separately (so the boundary is exact) and right-pad.

    ``add_eos`` appends the EOS token to a response (for complete responses in SFT/RL, not for
    a single intermediate step). Sequences longer than ``max_length`` keep their prompt's end
    and lose the response's tail.
    """
    if isinstance(add_eos, bool):
        add_eos = [add_eos] * len(prompts)
    rows, masks = [], []
    for prompt, resp, eos in zip(prompts, responses, add_eos):
        p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        r = tokenizer(resp, add_special_tokens=False)["input_ids"]
        if eos:
            r = r + [tokenizer.eos_token_id]
        ids = (p + r)[-max_length:] if len(p) >= max_length else (p + r)[:max_length]
        n_p = min(len(p), len(ids))
        rows.append(ids)
        masks.append([0] * n_p + [1] * (len(ids) - n_p))
    width = max(len(r) for r in rows)
    pad = tokenizer.pad_token_id
    input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    resp = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (ids, m) in enumerate(zip(rows, masks)):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        attn[i, : len(ids)] = 1
        resp[i, : len(m)] = torch.tensor(m)
    return PairBatch(input_ids, attn, resp)


def token_logprobs(model: Any, batch: PairBatch) -> torch.Tensor:
    """Log-prob of each token given its prefix, [B, L] (position 0 gets 0); masked by response."""
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    tok = torch.gather(logp, 2, batch.input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    out = torch.zeros_like(batch.input_ids, dtype=tok.dtype)
    out[:, 1:] = tok
    return out * batch.response_mask


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
