"""Task specs: the declarative YAML files under ``tasks/`` (installed as dapo_bench.task_specs).

A spec names the source of a benchmark (Hugging Face id/config/split/revision, a pinned download
from the origin repository, a local file relative to ``--data-dir``, or a built-in generator), the field mapping, the gold preprocessing, the prompt
(chat template with system/user text, or a raw template), the verifier and its options, the
metrics and the subject fields for breakdowns. It is parsed into frozen dataclasses; a bad spec
raises UserError naming the file and the field. A spec's ``hash`` covers its file bytes and the
resolved prompt template, so a result records exactly which spec produced it.

Not covered here: reading data (see ``sources``) and scoring (see ``task``).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dapo_bench.config import _build
from dapo_bench.errors import UserError
from dapo_bench.io import read_yaml_mapping
from dapo_bench.provenance import hash_bytes
from dapo_bench.registry import Registry

# every task spec by name, and every suite (a tuple of task names); filled on first use by
# ``tasks.builtin`` from the YAML files installed as ``dapo_bench.task_specs``
TASKS: Registry[TaskSpec] = Registry("task", modules=["dapo_bench.tasks.builtin"])
SUITES: Registry[tuple] = Registry("suite", modules=["dapo_bench.tasks.builtin"])

METRIC_KINDS = ("acc", "pass@k", "maj@k")
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class HubSource:
    """A Hugging Face dataset: ``load_dataset(path, name, split=split)``; ``fields`` overrides
    the task's field mapping where the hub copy names fields differently from the local file."""

    path: str
    name: str | None = None
    split: str = "test"
    revision: str | None = None  # a commit of the dataset repository (None: its main branch)
    license: str | None = None
    fields: dict = field(default_factory=dict)


@dataclass(frozen=True)
class UrlSource:
    """A file downloaded from the benchmark's origin repository at a pinned commit, checked
    against ``sha256`` and cached under the user cache dir (see ``tasks.download``). Its format
    is the URL's suffix (.jsonl, .json, .parquet); rows are as the origin ships them, so the
    task's ``fields`` map them (the same bytes as a ``--data-dir`` copy of ``file``)."""

    url: str
    sha256: str
    license: str
    fields: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Source:
    hf: HubSource | None = None
    url: UrlSource | None = None
    file: str | None = None  # relative to --data-dir, e.g. "math/gsm8k.jsonl"
    builtin: str | None = None  # "module:function(split, n=None) -> list[dict]"
    split: str | None = None  # default split of a builtin source
    splits: tuple[str, ...] = ()  # splits a builtin source offers


@dataclass(frozen=True)
class Fields:
    """Where each part of a problem is in a row. ``question`` may list several fields, joined
    by a blank line (empty ones skipped); ``id`` falls back to the row index."""

    question: tuple[str, ...] = ("question",)
    gold: str = "answer"
    id: str | None = None
    solution: str | None = None  # a worked gold solution (what SFT and the control train on)
    subjects: tuple[str, ...] = ()  # fields for per-subject breakdowns
    extra: tuple[str, ...] = ()  # further fields the prompt template or gold transform uses


@dataclass(frozen=True)
class Prompt:
    """``chat``: the model's chat template over ``system`` + ``user``; ``raw``: ``template``
    (or the string ``template_ref`` = "module:NAME" points at) used as is. ``{question}`` and
    other ``{field}`` names are substituted; other braces (``\\boxed{}``) are left alone."""

    style: str = "chat"
    system: str | None = None
    user: str = "{question}"
    template: str | None = None
    template_ref: str | None = None


@dataclass(frozen=True)
class VerifierSpec:
    name: str = "math"
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TrainSpec:
    """How ``dapo-bench train --task NAME`` uses the task. A task trains when its ``role`` is
    "train" (its rows are a training set, e.g. ``gsm8k_train``) or when ``split`` names the
    training split of a built-in source (``arith``: ``rl_train``); an eval task ("test", the
    default) never does. ``eval_tasks``: what the trained policy is evaluated on (empty: the
    task itself); ``preset``: the method preset used when neither ``--preset`` nor ``--model``
    is given (the preset tuned for ``default_model``)."""

    role: str = "test"
    split: str | None = None
    eval_tasks: tuple[str, ...] = ()
    preset: str = "default"


@dataclass(frozen=True)
class TaskSpec:
    name: str
    version: str
    description: str
    source: Source
    fields: Fields = Fields()
    gold_transform: str = "identity"
    solution_transform: str = "identity"  # fields.solution -> the text SFT trains on
    prompt: Prompt = Prompt()
    verifier: VerifierSpec = VerifierSpec()
    # how a completion becomes the verifier's input is the verifier's own rule; ``answer``, if
    # given (older specs), must name the same verifier
    answer: str | None = None
    code_prefix_field: str | None = None  # HumanEval: prepend this field to a body-only answer
    metrics: tuple[str, ...] = ("acc", "pass@k", "maj@k")
    max_new_tokens: int = 1024
    stop: tuple[str, ...] = ()
    # the model used when --model is not given ("module:function" returning a path); None:
    # --model is required. threads: CPU torch threads that suit that model (None: the CLI's)
    default_model: str | None = None
    threads: int | None = None
    train: TrainSpec = TrainSpec()
    spec_path: str = ""
    hash: str = ""

    def to_dict(self) -> dict:
        """The parsed spec as plain data (results' ``tasks.<t>.spec``, like lm-eval's
        ``configs``), without the machine-specific ``spec_path`` and the separate ``hash``."""
        from dataclasses import asdict

        d = asdict(self)
        d.pop("spec_path")
        d.pop("hash")
        return d

    def template_text(self) -> str:
        """The prompt template as recorded in results (chat parts or the raw template)."""
        p = self.prompt
        if p.style == "raw":
            return resolve_template(p, self.spec_path)
        return f"[chat] system: {p.system!r} | user: {p.user!r}"


def resolve_ref(ref: str, where: str, what: str) -> Any:
    """The object a ``"module:NAME"`` reference names (UserError naming ``where`` if none)."""
    mod, sep, attr = ref.partition(":")
    if not sep:
        raise UserError(f"{where}: {what} {ref!r}: expected 'module:NAME'")
    try:
        return getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError) as e:
        raise UserError(f"{where}: {what} {ref!r}: {e}") from None


def default_model(spec: TaskSpec) -> str | None:
    """The path of the spec's default model (``default_model`` called), or None."""
    if spec.default_model is None:
        return None
    return str(resolve_ref(spec.default_model, spec.spec_path, "default_model")())


def resolve_template(p: Prompt, where: str) -> str:
    if p.template is not None:
        return p.template
    if not p.template_ref or ":" not in p.template_ref:
        raise UserError(f"{where}: prompt.style raw needs prompt.template or template_ref 'm:NAME'")
    value = resolve_ref(p.template_ref, where, "prompt.template_ref")
    if not isinstance(value, str):
        raise UserError(f"{where}: prompt.template_ref {p.template_ref!r} is not a string")
    return value


def parse_spec(path: Path) -> TaskSpec:
    """Read and validate one YAML spec; errors name the file and the field."""
    text = path.read_bytes()
    data = read_yaml_mapping(path)
    for key in ("name", "version", "description", "source"):
        if key not in data:
            raise UserError(f"{path}: field {key!r} missing")
    data = dict(data, version=str(data["version"]))
    try:
        spec = _build(TaskSpec, data, "")
    except UserError as e:
        raise UserError(f"{path}: {str(e).lstrip(': ')}") from None
    _check(spec, path)
    template = spec.template_text() if spec.prompt.style == "raw" else ""
    return _replace(spec, spec_path=str(path), hash=hash_bytes(text + template.encode()))


def _replace(spec: TaskSpec, **kw: Any) -> TaskSpec:
    from dataclasses import replace

    return replace(spec, **kw)


def _check(spec: TaskSpec, path: Path) -> None:
    src = spec.source
    if not (src.hf or src.url or src.file or src.builtin):
        raise UserError(f"{path}: source needs at least one of hf, url, file, builtin")
    if src.url is not None:
        u = src.url
        if not u.url.startswith(("https://", "file://")):
            raise UserError(f"{path}: source.url.url must start with https:// or file://")
        if not _SHA256.fullmatch(u.sha256):
            raise UserError(f"{path}: source.url.sha256 must be 64 lowercase hex digits")
        if Path(u.url.split("?")[0]).suffix.lower() not in (".jsonl", ".json", ".parquet"):
            raise UserError(f"{path}: source.url.url must end in .jsonl, .json or .parquet")
    if spec.prompt.style not in ("chat", "raw"):
        raise UserError(f"{path}: prompt.style must be 'chat' or 'raw', got {spec.prompt.style!r}")
    if spec.answer is not None and spec.answer != spec.verifier.name:
        raise UserError(f"{path}: answer {spec.answer!r} must name the spec's verifier "
                        f"({spec.verifier.name!r}) or be left out: the verifier decides how a "
                        "completion becomes its input")
    for m in spec.metrics:
        if m not in METRIC_KINDS:
            raise UserError(f"{path}: metrics: unknown {m!r} (known: {', '.join(METRIC_KINDS)})")
    if spec.train.role not in ("test", "train"):
        raise UserError(f"{path}: train.role must be 'test' or 'train', got {spec.train.role!r}")
    if path.stem != spec.name:
        raise UserError(f"{path}: name {spec.name!r} must match the file name {path.stem!r}")
