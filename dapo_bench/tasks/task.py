"""A loaded task: problems, prompt rendering and scoring; serves eval and training rewards.

    task = load_task("gsm8k", data_dir="data/")           # or load_task("arith", split="rl_train")
    prompts = [task.prompt(p, tokenizer) for p in task.problems]
    with task.verifier() as v:
        verdicts = task.score(v, texts, problems)         # one Verdict per text, in order

``score`` turns each completion into the verifier's input by the verifier's own rule (its
``input_from``: math reads the full text, code runs the last fenced code block, completed with
the prompt's code when the model wrote only a function body), the one rule that training, the
reward callables and the server use too. ``vote_key`` gives what maj@k votes on (the verifier's:
math the normalised answer, code nothing).
``messages`` gives a chat task's turns for a server that applies the chat template itself
(``--backend openai --api chat``).

**Thinking**: the verifier's input is a completion's answer, never its thinking
(``verifiers.base.answer_text``, applied by every verifier's ``input_from``, so eval, training
rewards, the reward callables and the server share it). Thinking a server returns apart
(``reasoning_content``) is kept in the sample's ``reasoning`` and never reaches the verifier.

Not covered: generation (dapo_bench.generation) and metrics (dapo_bench.eval.metrics).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dapo_bench.errors import UserError
from dapo_bench.io import rows_digest
from dapo_bench.tasks.golds import make_gold
from dapo_bench.tasks.sources import load_rows
from dapo_bench.tasks.spec import TASKS, TaskSpec, resolve_template
from dapo_bench.verifiers.base import Verdict, Verifier

_FIELD = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Problem:
    id: str
    question: str
    gold: Any
    subjects: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    solution: str | None = None  # the spec's worked gold solution (SFT's target), if it has one
    row_hash: str = ""  # rows_digest of the source row: a resumed eval reuses a sample only
    # when the row it was made from is the same


def check_chat(spec: TaskSpec) -> None:
    """A task whose prompt is a chat (``messages``); a raw-text prompt is a UserError."""
    if spec.prompt.style == "raw":
        raise UserError(f"task {spec.name}: its prompt is raw text, not a chat; a server's chat "
                        f"endpoint would wrap it in a template: use --api completions")


def fill(template: str, values: dict[str, Any]) -> str:
    """Substitute ``{name}`` for known names only; LaTeX braces such as ``\\boxed{}`` stay."""
    return _FIELD.sub(lambda m: str(values[m[1]]) if m[1] in values else m[0], template)


def _present(v: Any) -> bool:
    return v is not None and str(v).strip() not in ("", "None")


@dataclass
class Task:
    spec: TaskSpec
    problems: list[Problem]
    origin: str  # where the rows came from (file path, hub id, URL, builtin)
    split: str | None = None
    n_total: int | None = None  # rows in the source before --limit (None: not known)
    rows_hash: str | None = None  # io.rows_digest of the rows used (after --limit)

    @property
    def name(self) -> str:
        return self.spec.name

    def prompt(self, problem: Problem, tokenizer: Any = None) -> str:
        """The full prompt text for ``problem``. Chat-style specs use the tokenizer's chat
        template (system merged into the user turn when the template rejects a system role);
        without a tokenizer or chat template they fall back to ``system\\n\\nuser\\n``."""
        p = self.spec.prompt
        if p.style == "raw":
            return fill(resolve_template(p, self.spec.spec_path),
                        {"question": problem.question, **problem.extra})
        msgs = self.messages(problem)
        if tokenizer is None or not getattr(tokenizer, "chat_template", None):
            return "\n\n".join(m["content"] for m in msgs) + "\n"
        try:
            return tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        except Exception:
            if len(msgs) == 1:
                raise
            merged = [{"role": "user", "content": "\n\n".join(m["content"] for m in msgs)}]
            return tokenizer.apply_chat_template(merged, tokenize=False, add_generation_prompt=True)

    def messages(self, problem: Problem) -> list[dict[str, str]]:
        """A chat-style spec's turns for ``problem``: the system turn (if the spec has one) and
        the user turn, what ``prompt`` renders through the chat template."""
        check_chat(self.spec)
        p = self.spec.prompt
        values = {"question": problem.question, **problem.extra}
        system = fill(p.system, values) if p.system else None
        return ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": fill(p.user, values)}]

    def make_verifier(self, **overrides: Any) -> Verifier:
        """A new instance of the spec's verifier with its options (overrides win); the caller
        closes it. ``verifier_key`` says which tasks can share one instance."""
        return self.verifier_cls(**{**self.spec.verifier.options, **overrides})

    @property
    def verifier_key(self) -> str:
        import json

        v = self.spec.verifier
        return json.dumps([v.name, v.options], sort_keys=True, default=str)

    @contextmanager
    def verifier(self, **overrides: Any) -> Iterator[Verifier]:
        """``make_verifier`` as a context manager: closed on exit."""
        v = self.make_verifier(**overrides)
        try:
            yield v
        finally:
            v.close()

    @property
    def verifier_cls(self) -> Any:
        """The registered class of the spec's verifier: the rules of its kind."""
        return _verifier_class(self.spec)

    def prediction(self, text: str, problem: Problem) -> Any:
        """The verifier's input for a completion of *problem* (its ``input_from``; a spec's
        ``code_prefix_field`` names the code the model was asked to complete)."""
        field_ = self.spec.code_prefix_field
        prefix = str(problem.extra.get(field_, "")) if field_ else None
        return self.verifier_cls.input_from(text, problem.gold, prefix)

    def score(self, verifier: Verifier, texts: list[str], problems: list[Problem],
              finished: list[bool] | None = None) -> list[Verdict]:
        """Verdicts for completions ``texts[i]`` of ``problems[i]``, in order. ``finished[i]``
        False: completion i was cut off at the token cap; a math answer then counts only when
        it is marked (boxed or after an answer phrase; see the math verifier). A code
        completion is judged by running its program either way (a program that passes its
        tests passes, whatever prose the cap cut off after it)."""
        if len(texts) != len(problems):
            raise ValueError("texts and problems differ in length")
        preds = [self.prediction(t, p) for t, p in zip(texts, problems)]
        return verifier.verify_batch(preds, [p.gold for p in problems], finished=finished)

    def vote_key(self, verdict: Verdict) -> str | None:
        """What maj@k votes on for this verdict (None: no answer, no vote)."""
        return self.verifier_cls.vote_key(verdict)

    @property
    def votes(self) -> bool:
        """Whether the task's verifier casts maj@k votes."""
        return bool(self.verifier_cls.votes)


def build_problems(spec: TaskSpec, rows: list[dict], origin: str, overrides: dict) -> list[Problem]:
    f = spec.fields
    question_fields = overrides.get("question", f.question)
    # a hub override may name one field ("problem"): never split it into characters
    question_fields = (question_fields,) if isinstance(question_fields, str) else tuple(
        question_fields)
    gold_field = overrides.get("gold", f.gold)
    id_field = overrides.get("id", f.id)
    subject_fields = {s: overrides.get(s, s) for s in f.subjects}
    problems, seen = [], set()
    check_gold = _verifier_class(spec).check_gold  # a gold that is no gold: named, not a 0
    for i, row in enumerate(rows):
        where = f"{origin}: row {i + 1}"
        missing = [k for k in (*question_fields, gold_field) if k not in row]
        if missing:
            raise UserError(f"{where}: field {missing[0]!r} missing (task {spec.name})")
        for k in question_fields:
            if row[k] is not None and not isinstance(row[k], str):
                raise UserError(f"{where}: field {k!r} must be text, got "
                                f"{type(row[k]).__name__} {_short(row[k])}")
        question = "\n\n".join(str(row[k]) for k in question_fields if _present(row[k]))
        if not question:
            raise UserError(f"{where}: field {question_fields[0]!r} is empty (task {spec.name})")
        pid = str(row[id_field]) if id_field and row.get(id_field) is not None else str(i)
        if pid in seen:
            raise UserError(f"{where}: duplicate id {pid!r} in field {id_field!r}")
        seen.add(pid)
        gold = make_gold(spec.gold_transform, row[gold_field], row, where)
        check_gold(gold, f"{where}: field {gold_field!r}")
        subjects = {k: str(row.get(src)) for k, src in subject_fields.items() if src in row}
        extra = {k: row[k] for k in spec.fields.extra if k in row}
        solution = None
        if f.solution and _present(row.get(f.solution)):
            solution = str(make_gold(spec.solution_transform, row[f.solution], row, where))
        problems.append(Problem(pid, question, gold, subjects, extra, solution,
                                rows_digest([row])))
    return problems


def _verifier_class(spec: TaskSpec) -> Any:
    from dapo_bench.verifiers.base import VERIFIERS

    return VERIFIERS.get(spec.verifier.name)


def _short(value: Any) -> str:
    import json

    s = json.dumps(value, default=str)
    return s if len(s) <= 40 else s[:37] + "..."


def load_task(
    name: str,
    *,
    split: str | None = None,
    data_dir: str | os.PathLike | None = None,
    path: str | os.PathLike | None = None,
    limit: int | None = None,
) -> Task:
    """Load a registered task's problems (first ``limit`` of them when given)."""
    spec: TaskSpec = TASKS.get(name)
    rows, overrides, origin = load_rows(spec, path=path, data_dir=data_dir, split=split)
    n_total = len(rows)
    if limit is not None:
        if limit < 1:
            raise UserError(f"--limit must be at least 1, got {limit}")
        rows = rows[:limit]
    problems = build_problems(spec, rows, origin, overrides)
    if not problems:
        raise UserError(f"task {name}: {origin} has no problems")
    return Task(spec, problems, origin, split or spec.source.split, n_total=n_total,
                rows_hash=rows_digest(rows))
