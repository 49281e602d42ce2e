"""A value model: an LM backbone with a scalar head (DAPO's critic, PPO's critic).

``ValueModel(backbone, hidden)`` gives one logit per position through ``Linear(hidden, 1)``
(zero-initialised, so an untrained critic says 0.5 after a sigmoid); ``forward`` reads the hidden
state of each row's LAST token (rows right-padded: position ``attention_mask.sum() - 1``), and
:meth:`ValueModel.hidden_values` gives the head on every position (PPO's per-token values).

Saved as ``<dir>/backbone`` (a transformers model directory, loadable on its own) plus
``<dir>/value_head.pt``. Not covered: LoRA, value heads on other architectures than a
transformers base model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from dapo_bench import dist
from dapo_bench.models import save_policy


class ValueModel(torch.nn.Module):
    """``backbone`` (a transformers base model) + ``Linear(hidden, 1)``; forward gives logits."""

    def __init__(self, backbone: Any, hidden_size: int):
        super().__init__()
        self.backbone = backbone
        self.head = torch.nn.Linear(hidden_size, 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    @classmethod
    def from_causal_lm(cls, lm: Any) -> ValueModel:
        """Take the transformer body of a causal LM (its ``base_model``); drop the LM head."""
        return cls(lm.base_model, lm.config.hidden_size)

    @property
    def device(self) -> Any:
        return self.head.weight.device

    def hidden_values(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The head's logit at every position, [B, L]."""
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask)[0]
        return self.head(hidden.float()).squeeze(-1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask)[0]
        last = attention_mask.sum(dim=1) - 1
        h = hidden[torch.arange(hidden.size(0)), last]
        return self.head(h.float()).squeeze(-1)

    def save(self, tokenizer: Any, out_dir: str | Path) -> Path:
        """Backbone and head, full weights under ZeRO-3 too; with several ranks every rank
        calls it (gathers are collectives) and rank 0 writes."""
        out = Path(out_dir)
        with dist.gathered(self.head):
            head = {k: v.detach().clone() for k, v in self.head.state_dict().items()}
        save_policy(self.backbone, tokenizer, out / "backbone")
        if dist.is_main():
            torch.save(head, out / "value_head.pt")
        dist.barrier()
        return out

    @classmethod
    def load(cls, path: str | Path) -> tuple[ValueModel, Any]:
        from transformers import AutoModel, AutoTokenizer

        path = Path(path)
        backbone = AutoModel.from_pretrained(path / "backbone")
        tok = AutoTokenizer.from_pretrained(path / "backbone")
        vm = cls(backbone, backbone.config.hidden_size)
        vm.head.load_state_dict(torch.load(path / "value_head.pt", weights_only=True))
        return vm.eval(), tok
