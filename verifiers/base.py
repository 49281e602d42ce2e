"""The verdict type, the verifier registry (the plug-point for new verifiers), and what every
verifier says about its own kind.

A verifier is registered under a name with a class (usually a :class:`Kind` subclass)::

    name: str; version: str
    fields: tuple[str, str]        # the `dapo-bench verify` row's fields: (prediction, gold)
    column: str                    # the dataset column a TRL reward reads the gold from
    def __init__(self, **options)  # e.g. timeout, mode; unknown options raise UserError
    def verify(self, prediction, gold) -> Verdict
    def verify_batch(self, predictions, golds, *, finished=None) -> list[Verdict]  # in order
    def close(self) -> None        # release workers

and, class-level, the rules of its kind that every caller asks instead of comparing names
(tasks, eval, training, the CLI, the server, the reward callables):

    input_from(completion, gold=None, prefix=None, where=...) -> prediction
        how a completion (a string, or chat messages) becomes its input (math: the text;
        code: the last fenced block, completed by the prompt's code when it holds only a body)
    check_gold(gold, where) -> None    UserError naming *where* for a gold that is no gold
    prediction_types                   the types a `verify` row's prediction may have
    claims(label) -> bool              whether a label of this shape is its gold (routing a
                                       label with no verifier named: :func:`verifier_for_label`)
    votes, vote_key(verdict)           whether and on what maj@k votes
    impossible_gold(gold, rng)         a gold no honest answer meets (canaries)
    stating(gold) -> str | None        a completion that states *gold* (None: none can)
    zoo() -> (names, completions, gold)  the exploit zoo an eval runs first
    serve_lanes, serve_options, probe()   how `dapo-bench serve` runs it
    worker_health() -> WorkerHealth       its worker processes now: live pids, how many lost

``finished``: one flag per prediction, False for a response cut off at the token cap (None:
all finished); each verifier decides what that means (math: only a marked answer counts;
code: nothing, the program runs either way).

``Verdict.reason`` vocabulary: "ok" (passed), "wrong_answer", "no_answer", "truncated" (math:
cut off at the cap with no marked answer), "timeout",
"too_large", "parse_error", "sandbox_error", "verifier_error" (math: a sympy worker died), and
the code verifier's per-test statuses ("runtime_error", "time_limit", "memory_limit",
"output_limit", "checker_crashed", ...).

``INFRA_REASONS``: the reasons that are a failure of the verifying machinery itself, not of the
answer (a worker or checker died, the sandbox is not isolated, the item's deadline passed
before the verifier could decide: math's ``timeout``). Such a verdict fails, and
``Verdict.infra_error`` says so: a caller that trains on rewards reports it (TRL: None, verl: a
flag; see dapo_bench.rewards) instead of a 0 that a policy would learn from.

No silent zero: a gold that is no gold (empty, NaN, missing, of the wrong kind) and a chat with
no assistant turn are the caller's mistake and raise UserError; only the model's own failure
scores 0.

``answer_text``: what a verifier is given of a completion is its answer, not its thinking (the
text after the last ``</think>``); ``Kind.input_from`` (and so every caller: eval, training
rewards, the reward callables, the server) applies it.
"""

from __future__ import annotations

import ast
import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from dapo_bench.errors import UserError
from dapo_bench.registry import Registry

INFRA_REASONS = frozenset({"sandbox_error", "checker_crashed", "verifier_error", "timeout"})
# (the code verifier's own time limit on a program is the candidate's: ``time_limit``)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str
    extracted: str | None = None  # the extracted answer (math) or None
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)  # e.g. per-test statuses (code)

    @property
    def reward(self) -> float:
        return 1.0 if self.passed else 0.0

    @property
    def infra_error(self) -> bool:
        """The verifier failed on its own side (``INFRA_REASONS``): no verdict on the answer."""
        return self.reason in INFRA_REASONS

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class WorkerHealth:
    """A verifier's worker processes as its own pool sees them: ``pids`` of the live ones,
    ``started`` (processes started since the pool was made) and ``lost`` (those that ended
    while the pool was open: died, were killed at a deadline, failed to start; each is
    replaced on next use). A verifier with no workers has none. ``a + b`` sums two (the
    server's lanes of one verifier)."""

    pids: tuple[int, ...] = ()
    started: int = 0
    lost: int = 0

    def __add__(self, other: WorkerHealth) -> WorkerHealth:
        return WorkerHealth(self.pids + other.pids, self.started + other.started,
                            self.lost + other.lost)


def short(value: Any, limit: int = 40) -> str:
    """*value* as JSON, cut to *limit* characters (for one-line messages)."""
    s = json.dumps(value, default=str, allow_nan=True)
    return s if len(s) <= limit else s[:limit - 3] + "..."


def completion_text(completion: Any, where: str = "completion") -> str:
    """The text of one completion: a string as is; chat messages (a list of ``{"role",
    "content"}`` dicts, as TRL passes a conversational completion, or one such dict) give the
    content of their assistant messages, joined by newlines (content given as parts keeps the
    text parts; a message without a role counts as the assistant's). A chat with no assistant
    message is a UserError: nothing the model wrote is there to grade."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if not isinstance(completion, (list, tuple)):
        raise UserError(f"{where}: expected a string or a list of messages, got "
                        f"{type(completion).__name__} {short(completion)}")
    texts = []
    for k, msg in enumerate(completion):
        if not isinstance(msg, dict) or "content" not in msg:
            raise UserError(f"{where}[{k}]: a message is a dict with 'role' and 'content'")
        if msg.get("role", "assistant") != "assistant":
            continue
        content = msg["content"]
        if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
            content = "".join(p.get("text", "") for p in content
                              if isinstance(p, dict) and p.get("type") == "text")
        texts.append("" if content is None else str(content))
    if not texts:
        roles = sorted({str(m.get("role")) for m in completion})
        raise UserError(f"{where}: a chat with no assistant message (roles: "
                        f"{', '.join(roles) or 'none'}): pass the model's completion, not the "
                        "prompt")
    return "\n".join(texts)


def structured(label: Any) -> bool:
    """Whether *label* is structured data: a JSON object or a non-empty list of objects, or a
    string that holds one (JSON or a Python literal). Test specifications are; a math answer
    (a string, a number, a list of them) is not."""
    if isinstance(label, str):
        s = label.strip()
        if not s.startswith(("{", "[")):
            return False
        try:
            label = json.loads(s)
        except ValueError:
            try:
                label = ast.literal_eval(s)
            except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                return False
    if isinstance(label, dict):
        return True
    return isinstance(label, (list, tuple)) and bool(label) and \
        all(isinstance(x, dict) for x in label)


class Kind:
    """Defaults of the kind-owning members (module docstring): a verifier that subclasses this
    overrides what its kind needs. A completion is its text; a gold must not be missing; no
    label shape routes to it (it is reached by name); no maj@k votes; no canaries; an empty
    exploit zoo; one shared instance in the server."""

    name: ClassVar[str] = ""
    fields: ClassVar[tuple[str, str]] = ("prediction", "gold")
    column: ClassVar[str] = "gold"
    prediction_types: ClassVar[tuple[type, ...]] = (str,)
    votes: ClassVar[bool] = False
    serve_lanes: ClassVar[bool] = False  # True: one instance of one worker per item at a time
    serve_options: ClassVar[dict] = {}  # constructor options the server adds

    @classmethod
    def input_from(cls, completion: Any, gold: Any = None, prefix: str | None = None,
                   where: str = "completion") -> Any:
        return answer_text(completion_text(completion, where))

    @classmethod
    def check_gold(cls, gold: Any, where: str = "gold") -> None:
        if gold is None:
            raise UserError(f"{where} is missing (null)")

    @classmethod
    def claims(cls, label: Any) -> bool:
        return False

    @classmethod
    def vote_key(cls, verdict: Verdict) -> str | None:
        return None

    @classmethod
    def impossible_gold(cls, gold: Any, rng: Any) -> Any:
        raise UserError(f"--canaries: the {cls.name} verifier has no canaries")

    @classmethod
    def stating(cls, gold: Any) -> str | None:
        return None

    @classmethod
    def zoo(cls) -> tuple[list[str], list[str], Any]:
        return [], [], None

    def probe(self) -> str | None:
        """Start the workers now; why this verifier cannot grade, or None."""
        return None

    def worker_health(self) -> WorkerHealth:
        """Its worker processes, from its own pool (none here)."""
        return WorkerHealth()

    if TYPE_CHECKING:
        # The instance side (module docstring; `Verifier`) that every verifier defines itself
        # and its callers use through ``VERIFIERS``' ``type[Kind]``: declared for the checker
        # only, with no default, so a verifier that lacks one still fails where it is used.
        def __init__(self, **options: Any) -> None: ...

        def verify(self, prediction: Any, gold: Any) -> Verdict: ...

        def verify_batch(self, predictions: list[Any], golds: list[Any], *,
                         finished: list[bool] | None = None) -> list[Verdict]: ...

        def close(self) -> None: ...


class Verifier(Protocol):
    name: str
    version: str
    fields: tuple[str, str]
    column: str
    prediction_types: tuple[type, ...]
    votes: bool

    def verify(self, prediction: Any, gold: Any) -> Verdict: ...

    def verify_batch(self, predictions: list[Any], golds: list[Any], *,
                     finished: list[bool] | None = None) -> list[Verdict]: ...

    def close(self) -> None: ...

    @classmethod
    def input_from(cls, completion: Any, gold: Any = None, prefix: str | None = None,
                   where: str = "completion") -> Any: ...

    @classmethod
    def check_gold(cls, gold: Any, where: str = "gold") -> None: ...

    @classmethod
    def vote_key(cls, verdict: Verdict) -> str | None: ...


VERIFIERS: Registry[type[Kind]] = Registry(
    "verifier",
    modules=["dapo_bench.verifiers.math", "dapo_bench.verifiers.code"],
)


def verifier_for_label(label: Any, where: str = "label") -> str:
    """The registered verifier whose gold a label of this shape is (its ``claims``): exactly
    one must claim it. The rule of the registered ones: structured data (a JSON object, a list
    of objects, or a string holding one: :func:`structured`) is code tests; a string, a number
    or a list of them is a math gold. A label no verifier claims, or several do, is a
    UserError naming *where*."""
    names = [e.name for e in VERIFIERS if e.obj.claims(label)]
    if len(names) == 1:
        return names[0]
    if not names:
        raise UserError(f"{where}: no verifier reads a label of this shape "
                        f"({type(label).__name__} {short(label)}); name the verifier")
    raise UserError(f"{where}: a label of this shape is read by several verifiers "
                    f"({', '.join(names)}); name the verifier")


THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
# the tags of each thinking format: DeepSeek-R1, Qwen3, QwQ (<think>); Sky-T1, Bespoke-Stratos,
# OpenThoughts (<|begin_of_thought|>, then the answer between <|begin_of_solution|> and
# <|end_of_solution|>)
THINKING = ((THINK_OPEN, THINK_CLOSE), ("<|begin_of_thought|>", "<|end_of_thought|>"))


def answer_text(text: str) -> str:
    """What a verifier is given of a completion: its answer, never its thinking. Text up to
    the last ``</think>`` (or ``<|end_of_thought|>``: :data:`THINKING`) is thinking (a template
    that opens ``<think>`` in the prompt, as
    DeepSeek-R1's does, included) and the answer is what follows it; a completion that opens
    ``<think>`` and never closes it was cut off while thinking and has no answer (""); a
    completion without the tags is read whole. Every kind's ``input_from`` applies it."""
    for opened, closed in THINKING:
        k = text.rfind(closed)
        if k >= 0:
            return text[k + len(closed):]
        if text.lstrip().startswith(opened):
            return ""
    return text
