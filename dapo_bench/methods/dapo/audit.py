"""Audit a DAPO run's artifacts: is every scored state and action the model's own token ids?

For each iteration ``it<k>/`` of a run directory:

- a state of ``advantages.jsonl`` is exact when its ``prefix_ids`` are a prefix of the generated
  ids of one of its problem's rollouts (``rollouts.jsonl``);
- an action is exact when its ``ids`` begin one of its state's Monte Carlo completions as
  generated (``mc.jsonl``);
- with the run's tokenizer, ``reencoded_differs`` counts the actions whose text, decoded and
  tokenised again in its state, would NOT give the generated ids (what scoring re-encoded text
  would get wrong: with a char-level tokenizer 0, with byte-level BPE often many).

The files are read through their rows (``Group``, ``rows.McRow``, ``rows.AdvantageRow``). The
report adds the run's truncation counts (``results.json`` ``counts``). ``dapo-bench audit
RUN_DIR`` prints it and exits non-zero unless every scored state and action is exact.

Not covered: runs of other methods (their rows are checked by the same rule in tests).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dapo_bench.errors import UserError
from dapo_bench.io import iter_jsonl, read_json
from dapo_bench.methods.dapo.rows import AdvantageRow, McRow
from dapo_bench.training.rollouts import group_from_row

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def _starts(seq: list[int], prefix: list[int]) -> bool:
    return len(prefix) <= len(seq) and seq[: len(prefix)] == prefix


def audit_iteration(d: Path, tokenizer: PreTrainedTokenizerBase | None = None) -> dict:
    """Counts of exact states and actions of one iteration directory (see the module doc)."""
    for name in ("rollouts.jsonl", "mc.jsonl", "advantages.jsonl"):
        if not (d / name).is_file():
            raise UserError(f"{d / name}: missing (not a finished DAPO iteration)")
    generated: dict[str, list[list[int]]] = {}
    for g in map(group_from_row, iter_jsonl(d / "rollouts.jsonl")):
        generated[g.problem_id] = [r.token_ids or [] for r in g.rollouts]
    completions = {m.key: [c.token_ids or [] for c in m.completions]
                   for m in map(McRow.from_row, iter_jsonl(d / "mc.jsonl"))}
    states = states_exact = actions = actions_exact = differs = 0
    for s in map(AdvantageRow.from_row, iter_jsonl(d / "advantages.jsonl")):
        prefix = list(s.prefix_ids)
        states += 1
        states_exact += any(_starts(g, prefix) for g in generated.get(s.problem_id, []))
        for a in s.actions:
            ids = list(a.ids)
            actions += 1
            actions_exact += bool(ids) and any(
                _starts(c, ids) for c in completions.get(s.key, []))
            if tokenizer is not None:
                differs += _reencoded(tokenizer, prefix, ids) != ids
    return {"states": states, "states_exact": states_exact, "actions": actions,
            "actions_exact": actions_exact,
            "reencoded_differs": differs if tokenizer is not None else None}


def _reencoded(tokenizer: PreTrainedTokenizerBase, prefix: list[int], ids: list[int]
               ) -> list[int]:
    """The action's ids as re-encoding text would give them: (state + action) text tokenised,
    minus the state text tokenised (the old, wrong way)."""
    full = tokenizer(tokenizer.decode(prefix + ids), add_special_tokens=False)["input_ids"]
    head = tokenizer(tokenizer.decode(prefix), add_special_tokens=False)["input_ids"]
    tail = full[len(head):] if full[: len(head)] == head else full
    if ids and ids[-1] == tokenizer.eos_token_id:
        tail = tail + [tokenizer.eos_token_id]
    return tail


def audit_run(run_dir: str | Path, tokenizer: PreTrainedTokenizerBase | None = None) -> dict:
    """The audit of every iteration of a DAPO run dir, the share of exact items, and the run's
    truncation counts."""
    run = Path(run_dir)
    its = sorted((p for p in run.glob("it*") if p.is_dir()), key=lambda p: int(p.name[2:]))
    if not its:
        raise UserError(f"{run}: no it<k>/ directories (not a DAPO run dir)")
    per = {p.name: audit_iteration(p, tokenizer) for p in its}
    n = sum(v["states"] + v["actions"] for v in per.values())
    exact = sum(v["states_exact"] + v["actions_exact"] for v in per.values())
    res = run / "results.json"
    counts = read_json(res).get("counts", {}) if res.is_file() else {}
    return {"iterations": per, "items": n, "exact": exact,
            "exact_share": exact / n if n else 1.0, "counts": counts}
