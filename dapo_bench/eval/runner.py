"""``evaluate``: generate, verify and score tasks; write ``results.json`` and ``samples.jsonl``.

    from dapo_bench.eval import evaluate
    results = evaluate("path/to/model", ["gsm8k"], run_dir="runs/x", data_dir="data/", limit=20)
    results = evaluate(generator, ["arith", "arith_ood"], run_dir=...)   # a loaded Generator

Problems go to the generator in chunks of ``chunk`` prompts; each chunk's completions are
verified and appended to ``samples.jsonl`` before the next chunk starts, so a killed run loses
at most one chunk of work and a rerun with the same run directory and settings generates only
what is missing (the hf backend's per-sample seeds do not depend on batching, so resumed runs
give the same samples). ``results.json`` is written at the end (schema: dapo_bench.results),
with the average of every registered suite whose tasks all ran. A rerun after the task's
verifier got a new version (same options) re-verifies the logged samples from their text and
finish_reason, without generating them again, and reports the new verdicts.

An infrastructure error (``Verdict.infra_error``: the sandbox or a verifier worker failed on
its own side) is no verdict on the answer: it is verified a second time at once; what still
fails is logged with its reason, left out of the metrics with its whole problem (counted in the
task's ``infra_errors``, never scored 0), and verified again by the next run of the command.

Several ranks (``torchrun``): each rank, with its own generator (on its own GPU where there
are GPUs), generates and verifies chunk ``rank`` of a task's pending problems and then whichever
chunk no rank has taken yet (``dist.WorkQueue``), so a rank that drew short problems does not
idle while another works through long ones; chunks shrink below ``chunk`` so that their number
is a multiple of the world size (a 30-problem task on 2 ranks is two chunks of 15, not one that
leaves rank 1 idle); the rows are merged in problem order, so the samples and the results are
one process's, whichever rank made them.

A request the generator could not answer (``Completion.error``: the ``openai`` backend's server
failed it after every retry) is no sample: it is logged with the reason ``generation_error``,
left out of the metrics with its whole problem (counted in ``infra_errors``, never scored 0),
and generated again by the next run of the command (which the backend answers from its
response log, ``Generator.keep_responses``, for every request that was answered).

Before a verifier scores anything, the exploit zoo (``eval.zoo``) runs through it: an attack
that passes stops the eval (``RunStopped``).

Not covered: truncating prompts longer than the model's context; several models in one call.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dapo_bench import dist
from dapo_bench.errors import UserError
from dapo_bench.eval import zoo
from dapo_bench.eval.progress import Progress
from dapo_bench.eval.report import model_info, task_result
from dapo_bench.eval.store import GENERATION_ERROR, SampleStore, infra_samples
from dapo_bench.generation.base import Generator, SamplingParams
from dapo_bench.io import read_json
from dapo_bench.nodes import check_shared_dir
from dapo_bench.provenance import settings_run_id
from dapo_bench.results import build_results, now_utc, write_results
from dapo_bench.tasks import Task, load_task

RESPONSES = "responses.jsonl"  # a server backend's answers, so that a rerun sends only the rest


def default_run_id(tasks: list[str], model: str, settings: dict, suite: str | None = None) -> str:
    """``eval-<suite or tasks>-<model name>-<hash8 of the settings>``: the same command gives
    the same run dir, so rerunning it resumes (``provenance.settings_run_id``)."""
    what = suite or ("-".join(tasks) if len(tasks) <= 2 else f"{len(tasks)}tasks")
    name = Path(str(model).rstrip("/")).name or "model"
    return settings_run_id(f"eval-{what}-{name}", settings)


def covered_suites(names: list[str]) -> dict[str, tuple[str, ...]]:
    """The registered suites all of whose tasks are in ``names`` (results give their average)."""
    from dapo_bench.tasks import SUITES

    have = set(names)
    return {e.name: e.obj for e in SUITES if e.obj and set(e.obj) <= have}



def check_sampling(n: int, temperature: float, top_p: float, max_new_tokens: int | None,
                   limit: int | None) -> None:
    """Every sampling option, checked before anything is loaded or written (flag names)."""
    if n < 1:
        raise UserError(f"--n must be at least 1, got {n}")
    if temperature < 0:
        raise UserError(f"--temperature must be >= 0, got {temperature:g}")
    if not 0 < top_p <= 1:
        raise UserError(f"--top-p must be in (0, 1], got {top_p:g}")
    if n > 1 and temperature == 0:
        raise UserError("--n > 1 needs --temperature > 0 (greedy samples would be identical)")
    if max_new_tokens is not None and max_new_tokens < 0:
        raise UserError(f"--max-new-tokens must be >= 0 (0: each task's own), got "
                        f"{max_new_tokens}")
    if limit is not None and limit < 1:
        raise UserError(f"--limit must be at least 1, got {limit}")


def check_not_shrinking(run_dir: str | os.PathLike, sizes: dict[str, int]) -> None:
    """A finished eval (its ``results.json``) is only replaced by one that covers every task
    and problem it covered (a rerun may extend it: more tasks, a larger --limit)."""
    path = Path(run_dir) / "results.json"
    if not path.is_file():
        return
    old = {t: v.get("n_problems", 0) for t, v in (read_json(path).get("tasks") or {}).items()}
    lost = [t for t, k in old.items() if sizes.get(t, 0) < k]
    if lost:
        def desc(d: dict) -> str:
            return ", ".join(f"{t} ({k} problems)" for t, k in d.items())
        raise UserError(f"{path}: a finished eval of {desc(old)}; this command covers "
                        f"{desc(sizes)} and would replace it (a rerun may only add tasks or "
                        f"problems); use another --run-id")


def _verdict_fields(v) -> dict:
    return {"extracted": v.extracted, "passed": bool(v.passed), "reason": v.reason}


def _sample_row(task: Task, problem, prompt, comps, verdicts, seconds: float) -> dict:
    def sample(c, v) -> dict:
        extra = {"reasoning": c.reasoning, "error": c.error, "server": c.meta}
        return {"text": c.text, "n_tokens": c.n_tokens, "finish_reason": c.finish_reason,
                **_verdict_fields(v), **{k: x for k, x in extra.items() if x is not None}}

    return {
        "task": task.name, "task_hash": task.spec.hash, "id": problem.id,
        "row_hash": problem.row_hash, "seconds": round(seconds, 4), "prompt": prompt,
        "gold": problem.gold, "subjects": problem.subjects,
        "samples": [sample(c, v) for c, v in zip(comps, verdicts)],
    }


def _generated_verdicts(task: Task, verifier: Any, comps: list, problems: list) -> list:
    """Verdicts of ``comps`` (flat, with their ``problems``); a completion whose request failed
    gets none (``GENERATION_ERROR``, an infrastructure outcome)."""
    from dapo_bench.verifiers.base import Verdict

    ok = [i for i, c in enumerate(comps) if c.error is None]
    out = [Verdict(False, GENERATION_ERROR) for _ in comps]
    for i, v in zip(ok, _score(task, verifier, [comps[i].text for i in ok],
                               [problems[i] for i in ok],
                               [comps[i].finish_reason == "stop" for i in ok])):
        out[i] = v
    return out


def _prompt(task: Task, gen: Generator, problem) -> Any:
    """What the generator takes: the rendered prompt, or the chat (``prompt_format``)."""
    if getattr(gen, "prompt_format", "text") == "messages":
        return task.messages(problem)
    return task.prompt(problem, gen.tokenizer)


def _score(task: Task, verifier: Any, texts: list[str], problems: list,
           finished: list[bool]) -> list:
    """``task.score``, then once more for the verdicts that are infrastructure errors (the
    verifier failed on its own side, ``Verdict.infra_error``; a worker that died is restarted
    by then). What still fails is kept as it is: the metrics leave it out (``eval.report``)."""
    verdicts = list(task.score(verifier, texts, problems, finished))
    again = [i for i, v in enumerate(verdicts) if v.infra_error]
    if again:
        for i, v in zip(again, task.score(verifier, [texts[i] for i in again],
                                          [problems[i] for i in again],
                                          [finished[i] for i in again])):
            verdicts[i] = v
    return verdicts


def _reverify(task: Task, store: SampleStore, verifier: Any, chunk: int, probs: list) -> None:
    """Verify the logged samples of ``probs`` again, from their text and finish_reason, each
    rank its share of the problems; rows keep their ``seconds`` (the generation's)."""
    chunks = dist.even_chunks(probs, chunk)
    for k in dist.WorkQueue(len(chunks)):
        rows = [store.rows[task.name, p.id] for p in chunks[k]]  # each one logged
        flat = [(p, s) for p, r in zip(chunks[k], rows) for s in r["samples"]]
        verdicts = iter(_score(task, verifier, [s["text"] for _, s in flat],
                               [p for p, _ in flat],
                               [s["finish_reason"] == "stop" for _, s in flat]))
        for r in rows:
            store.add({**r, "samples": [{**s, **_verdict_fields(next(verdicts))}
                                        for s in r["samples"]]})
    store.sync()


def _verify_logged(task: Task, store: SampleStore, verifier: Any, chunk: int,
                   progress: Progress) -> None:
    """Before generating: the logged samples of a verifier's older version are verified again
    with the current one, and a logged infrastructure error (no verdict yet) is tried again."""
    if task.name in store.stale:
        old, new = store.stale[task.name]
        logged = [p for p in task.problems if store.get(task.name, p.id) is not None]
        progress.note(f"{task.name}: re-verifying the {len(logged)} logged problems with "
                      f"verifier {task.spec.verifier.name} {new} (they were verified by {old}); "
                      f"no generation")
        _reverify(task, store, verifier, chunk, logged)
        if len(logged) == store.count(task.name):  # else rows beyond this run's problems stay old
            store.reverified(task.name)
    broken = [p for p in task.problems if infra_samples(store.get(task.name, p.id))
              and not _failed(store.get(task.name, p.id))]
    if broken:
        progress.note(f"{task.name}: verifying again the {len(broken)} logged problem(s) whose "
                      f"verifier failed on its own side (infrastructure errors); no generation")
        _reverify(task, store, verifier, chunk, broken)


def _run_task(task, gen, store, params, chunk, progress, verifiers) -> tuple[list, float, dict]:
    """Rows of every problem of ``task`` (logged ones reused), seconds spent over all the runs
    that made them, verifier info. ``verifiers`` caches one verifier instance per (name,
    options) across tasks."""
    if task.verifier_key not in verifiers:
        verifiers[task.verifier_key] = task.make_verifier()
        zoo.check(task, verifiers[task.verifier_key])  # no attack passes, or the run stops
    verifier = verifiers[task.verifier_key]
    _verify_logged(task, store, verifier, chunk, progress)
    pending = [p for p in task.problems if store.get(task.name, p.id) is None
               or _failed(store.get(task.name, p.id))]
    chunks = dist.even_chunks(pending, chunk)
    queue = dist.WorkQueue(len(chunks))  # several ranks: each takes the next free chunk
    multi = dist.world_size() > 1  # then each rank reports the task's progress and its share
    resumed = len(task.problems) - len(pending)
    bar = progress.start(f"{task.name} (rank {dist.rank()}/{dist.world_size()})" if multi
                         else task.name, total=len(task.problems), done=resumed)
    vinfo = {"name": getattr(verifier, "name", task.spec.verifier.name),
             "version": str(getattr(verifier, "version", "")),
             "options": dict(task.spec.verifier.options)}
    made, seen, mine = 0, 0, []
    for k in queue:
        mine.append(k)
        probs = chunks[k]
        t0 = time.perf_counter()
        prompts = [_prompt(task, gen, p) for p in probs]
        comps = gen.generate(prompts, params)
        flat = [p for p in probs for _ in range(params.n)]
        verdicts = _generated_verdicts(task, verifier, [c for cs in comps for c in cs], flat)
        share = (time.perf_counter() - t0) / len(probs)
        for i, (p, prompt) in enumerate(zip(probs, prompts)):
            vs = verdicts[i * params.n : (i + 1) * params.n]
            store.add(_sample_row(task, p, prompt, comps[i], vs, share))
        made, done = made + len(probs), queue.done(len(probs))  # done: over every rank
        progress.advance(bar, done - seen)
        seen = done
    progress.finish(bar, made=made if multi else None)
    store.sync()
    rows = [store.get(task.name, p.id) for p in task.problems]
    missing = [p.id for p, r in zip(task.problems, rows) if r is None]
    if missing:  # a rank's rows not on disk when the others read them: say what was seen
        files = sorted(f.name for f in store.run_dir.glob("samples*.jsonl"))
        raise RuntimeError(f"{task.name}: rank {dist.rank()}/{dist.world_size()} sees no logged "
                           f"row of {len(missing)} problem(s) ({', '.join(missing[:5])}) after "
                           f"the ranks synced; it made chunks {mine} of {len(chunks)}; files "
                           f"in {store.run_dir}: {files}")
    return rows, sum(r.get("seconds", 0.0) for r in rows), vinfo


def _failed(row: dict | None) -> bool:
    """A logged row with a sample whose request failed: its problem is generated again."""
    return any(s["reason"] == GENERATION_ERROR for s in (row or {}).get("samples", ()))


def _note_infra(name: str, result: dict, progress: Progress) -> None:
    if "infra_errors" in result:
        e = result["infra_errors"]
        what = ("the generator could not get (failed requests)"
                if e["reasons"] == [GENERATION_ERROR] else "the verifier could not verify, twice")
        progress.note(f"{name}: {e['problems']} problem(s) left out of the metrics: "
                      f"{e['samples']} sample(s) {what} (infrastructure errors, "
                      f"{', '.join(e['reasons'])}); rerun the command to try them again")


def _task_fingerprint(task: Task, max_new_tokens: int) -> dict:
    """What a task's samples depend on besides the model and sampling (see ``eval.store``)."""
    from dapo_bench.provenance import hash_bytes
    from dapo_bench.verifiers.base import VERIFIERS

    v = task.spec.verifier
    return {"spec": task.spec.hash, "split": task.split, "max_new_tokens": max_new_tokens,
            "prompt": hash_bytes(task.spec.template_text().encode()),
            "verifier": {"name": v.name, "options": dict(v.options),
                         "version": str(getattr(VERIFIERS.get(v.name), "version", ""))},
            "data": task.rows_hash, "rows": len(task.problems)}


def evaluate(
    model_or_generator: str | os.PathLike | Generator,
    tasks: Sequence[str | Task],
    *,
    run_dir: str | os.PathLike,
    n: int = 1,
    temperature: float = 0.0,
    top_p: float = 1.0,
    max_new_tokens: int | None = None,
    seed: int = 0,
    limit: int | None = None,
    backend: str = "hf",
    data_dir: str | os.PathLike | None = None,
    data_files: dict[str, str] | None = None,
    chunk: int = 64,
    quiet: bool = False,
    method: str = "base",
    config: dict | None = None,
    generator_options: dict | None = None,
) -> dict:
    """Evaluate a model (path/hub id, or a loaded Generator) on tasks; return the results dict.

    ``max_new_tokens`` None uses each task spec's own value; ``data_files`` maps a task name to
    an explicit data file. ``n > 1`` needs ``temperature > 0`` (greedy samples are identical).
    """
    check_sampling(n, temperature, top_p, max_new_tokens, limit)
    started = now_utc()
    t_start = time.perf_counter()
    loaded = [
        t if isinstance(t, Task) else load_task(
            t, data_dir=data_dir, path=(data_files or {}).get(t), limit=limit)
        for t in tasks
    ]
    names = [t.name for t in loaded]
    if len(set(names)) != len(names):
        raise UserError(f"each task may appear once per eval run, got {names}")
    check_not_shrinking(run_dir, {t.name: len(t.problems) for t in loaded})
    own = not isinstance(model_or_generator, Generator)
    if isinstance(model_or_generator, Generator):
        gen = model_or_generator
    else:
        from dapo_bench.generation.base import load_generator

        gen = load_generator(backend, str(model_or_generator), **(generator_options or {}))
    model = model_info(gen, model_or_generator)
    mnt = {t.name: max_new_tokens or t.spec.max_new_tokens for t in loaded}
    fingerprint = {
        "model_hash": model["hash"], "backend": gen.backend, "n": n,
        "temperature": temperature, "top_p": top_p, "seed": seed,
        **({"backend_settings": gen.fingerprint()} if gen.fingerprint() else {}),
        "tasks": {t.name: _task_fingerprint(t, mnt[t.name]) for t in loaded},
    }
    check_shared_dir(run_dir)  # every node sees this folder, or every rank stops here
    store = SampleStore(run_dir, fingerprint,
                        {t.name: {p.id: p.row_hash for p in t.problems} for t in loaded})
    gen.keep_responses(Path(run_dir) / (RESPONSES if dist.world_size() == 1
                                        else f"responses.rank{dist.rank()}.jsonl"))
    progress = Progress(quiet=quiet or not dist.is_main())
    task_results: dict[str, dict] = {}
    verifiers: dict[str, Any] = {}
    try:
        for task in loaded:
            params = SamplingParams(n=n, temperature=temperature, top_p=top_p,
                                    max_new_tokens=mnt[task.name], stop=task.spec.stop, seed=seed)
            rows, secs, vinfo = _run_task(task, gen, store, params, chunk, progress, verifiers)
            task_results[task.name] = task_result(task, rows, vinfo, mnt[task.name], secs)
            _note_infra(task.name, task_results[task.name], progress)
        store.merge([(t.name, p.id) for t in loaded for p in t.problems])
    finally:
        for v in verifiers.values():
            v.close()
        store.close()
        progress.close()
        server = gen.provenance()
        if own:
            gen.close()
    seconds = sum(r["seconds"] for r in task_results.values())
    results = build_results(
        run_id=Path(run_dir).name, kind="eval", method=method, model=model, backend=gen.backend,
        seed=seed,
        # max_new_tokens: the flag, or the largest per-task default (each task block has its own)
        sampling={"n": n, "temperature": temperature, "top_p": top_p,
                  "max_new_tokens": max_new_tokens or max(mnt.values())},
        tasks=task_results, suites=covered_suites(names),
        config={**(config or {}), "limit": limit,
                "data_dir": str(data_dir) if data_dir else None, "chunk": chunk},
        started_at=started, wall_seconds=time.perf_counter() - t_start,
        run_seconds=seconds,  # over every part of a resumed run (each sample's share)
        **({"server": server} if server else {}),
    )
    if dist.is_main():
        write_results(run_dir, results)
    return results
