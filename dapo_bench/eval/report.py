"""Assembling a task's block of ``results.json`` from its sample rows, and the summary table.

Not covered: rendering leaderboards across runs (dapo_bench.leaderboard does that).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from dapo_bench.eval.metrics import breakdown, task_metrics
from dapo_bench.eval.store import infra_samples
from dapo_bench.provenance import hash_path


def model_info(gen: Any, arg: Any) -> dict:
    """Path, content hash (of a local directory; hub ids are recorded as such), size, name,
    and the device it ran on."""
    path = str(getattr(gen, "model_path", None) or arg)
    p = Path(path)
    digest = getattr(gen, "model_hash", None) or (hash_path(p) if p.exists() else f"hub:{path}")
    n_params = gen.n_params  # None: a served model's size is not known here
    return {"path": path, "hash": digest, "n_params": None if n_params is None else int(n_params),
            "name": p.name or path, "device": str(getattr(gen, "device", "unknown"))}


def task_result(task: Any, rows: list[dict], verifier: dict, max_new_tokens: int,
                seconds: float) -> dict:
    """One task's block of results.json. A problem with a sample the verifier could not
    verify (an infrastructure error) is left out of the metrics and the breakdown, whole, so
    that every scored problem has its n samples, and counted in ``infra_errors``."""
    all_rows, broken = rows, {r["id"]: infra_samples(r) for r in rows}
    rows = [r for r in rows if not broken[r["id"]]]
    if all_rows and not rows:
        why = sorted({s["reason"] for v in broken.values() for s in v})
        raise RuntimeError(f"{task.name}: every problem failed on the infrastructure's side "
                           f"(the verifier or the generator's requests: {', '.join(why)}); the "
                           f"samples are kept, rerun the command to try them again")
    passed = [[bool(s["passed"]) for s in r["samples"]] for r in rows]
    keys = None
    if "maj@k" in task.spec.metrics and task.votes:
        from dapo_bench.verifiers.base import Verdict

        keys = [[task.vote_key(Verdict(bool(s["passed"]), s["reason"], s.get("extracted")))
                 for s in r["samples"]] for r in rows]
    per_problem = [sum(p) / len(p) for p in passed]
    reasons = Counter(s["reason"] for r in all_rows for s in r["samples"])
    lost = {k: v for k, v in broken.items() if v}
    return {
        "version": task.spec.version,
        "hash": task.spec.hash,
        "prompt_template": task.spec.template_text(),
        "spec": task.spec.to_dict(),  # the task config as parsed (lm-eval's "configs")
        "verifier": verifier,
        "source": task.origin,
        "split": task.split,
        "max_new_tokens": max_new_tokens,
        "n_problems": len(rows),  # scored: with a verdict on every sample
        # the task's full size (before --limit) and a digest of the rows used (io.rows_digest)
        "n_problems_total": task.n_total if task.n_total is not None else len(all_rows),
        "rows_hash": task.rows_hash,
        "n_samples": sum(len(p) for p in passed),
        "generated_tokens": sum(s["n_tokens"] for r in all_rows for s in r["samples"]),
        "seconds": round(seconds, 3),
        "metrics": task_metrics(passed, keys, task.spec.metrics),
        "breakdown": breakdown([r.get("subjects") or {} for r in rows], per_problem),
        "reasons": dict(reasons.most_common()),
        **_server_usage(all_rows),
        **({"infra_errors": {
            "problems": len(lost), "samples": sum(len(v) for v in lost.values()),
            "reasons": sorted({s["reason"] for v in lost.values() for s in v}),
            "ids": sorted(lost)[:20]}} if lost else {}),
    }


def _server_usage(rows: list[dict]) -> dict:
    """What a server reported for a task's samples (``--backend openai``): its finish reasons
    and token usage; {} for the in-process backends."""
    meta = [s["server"] for r in rows for s in r["samples"] if s.get("server")]
    if not meta:
        return {}
    return {"server": {
        "finish_reasons": dict(Counter(str(m.get("finish_reason")) for m in meta).most_common()),
        "prompt_tokens": sum(m.get("prompt_tokens") or 0 for m in meta),
        "completion_tokens": sum(m.get("completion_tokens") or 0 for m in meta),
        "models": sorted({str(m.get("model")) for m in meta})}}


def _fmt(m: dict | None) -> str:
    if m is None:
        return "-"
    se = m.get("stderr")
    return f"{100 * m['value']:.1f}" + (f" ± {100 * se:.1f}" if se is not None else "")


def summary_table(results: dict) -> Any:
    """A rich Table: one row per task with acc, the largest pass@k and maj@k, tokens, time."""
    from rich.table import Table

    s = results.get("sampling", {})
    title = (f"{results['model']['name']} ({results['backend']}, n={s.get('n')}, "
             f"T={s.get('temperature')}) -> {results['run_id']}")
    table = Table(title=title, title_justify="left")
    for col in ("task", "problems", "acc %", "pass@k %", "maj@k %", "tokens", "s"):
        table.add_column(col, justify="left" if col == "task" else "right")
    for name, t in results["tasks"].items():
        m = t["metrics"]
        pk = max((k for k in m if k.startswith("pass@")), key=lambda k: int(k[5:]), default=None)
        mk = max((k for k in m if k.startswith("maj@")), key=lambda k: int(k[4:]), default=None)
        table.add_row(
            name, str(t["n_problems"]), _fmt(m.get("acc")),
            f"{pk}: {_fmt(m[pk])}" if pk else "-", f"{mk}: {_fmt(m[mk])}" if mk else "-",
            str(t["generated_tokens"]), f"{t['seconds']:.1f}",
        )
    for name, su in (results.get("suites") or {}).items():  # mean over the suite's tasks
        table.add_row(f"{name} macro", str(su["n_problems"]), _fmt(su["macro"].get("acc")),
                      "", "", "", "")
    return table
