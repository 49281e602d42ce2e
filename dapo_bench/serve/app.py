"""The HTTP app (Starlette, run by uvicorn): ``POST /verify``, ``POST /get_reward`` and
``POST /get_reward/{verifier}`` (OpenRLHF's remote reward-model protocol), ``GET /health``,
``GET /metrics``.

Every refusal is JSON ``{"error": "<one line>"}``: 400 for malformed JSON, a missing or
mistyped field (named: ``items[3]: field 'gold' missing``), a gold that is no gold (empty,
NaN, null; for ``/get_reward`` the message names OpenRLHF's ``--data.label_key``), 413 for a
body over the limit, 429 with ``Retry-After`` when the admitted items would exceed the queue,
503 (``Retry-After``) from ``/get_reward`` when an item failed in the verifier itself twice
(its reward would be a number a policy learns from; OpenRLHF's client retries) and from
``/health`` while starting. A refusal's line also goes to the server's stderr, once per
distinct message (OpenRLHF's client logs only the status). Verdicts come from
:class:`~dapo_bench.serve.verifying.Engine`; rows are :func:`~dapo_bench.serve.rows.verdict_row`,
as ``dapo-bench verify`` writes them.

``/get_reward``'s verifier: the request's ``verifier`` field, else the path's, else the
server's ``--verifier``; ``auto`` (the default) routes each label by its shape
(``verifiers.base.verifier_for_label``: structured data, i.e. a JSON object or a list of
objects, or a string holding one, is code tests; a string, a number or a list of them a math
gold), so one server grades a dataset of both kinds.

Each endpoint is a module-level function over an :class:`AppState` (the settings, the metrics,
the engine, the 400 messages already said): ``verify(state, body)``, ``get_reward(state, body,
verifier)``, ``health(state)``, ``metrics_page(state)``, each callable and testable alone
(tests/serve/test_serve_handlers.py); :func:`answer` turns a handler's dict or refusal into the
response and counts it; :func:`lifespan` starts and stops the engine; :func:`build_app` only
wires routes to them. ``/health``'s worker pids and ``worker_restarts_total`` come from the
verifiers' own pools (``Engine.worker_health``).

Not here: worker management (``verifying``), the command line (``commands/serve.py``).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dapo_bench.errors import UserError
from dapo_bench.serve.prometheus import Metrics
from dapo_bench.serve.rows import check_item, verdict_row
from dapo_bench.serve.verifying import Engine
from dapo_bench.verifiers.base import VERIFIERS, short, verifier_for_label

OPTIONS = ("explain",)
AUTO = "auto"  # /get_reward: each label's verifier by its shape
LABEL_HINT = ("OpenRLHF sends the dataset column named by --data.label_key as labels "
              "(\"\" without that flag)")


@dataclass(frozen=True)
class Settings:
    workers: int = 2
    timeout: float | None = None  # seconds per item (the verifiers' own default)
    queue_size: int = 4096  # items admitted at once
    max_body_bytes: int = 16 << 20
    verifier: str = AUTO  # /get_reward's default: a registered verifier, or auto
    retry_after_s: int = 1


@dataclass
class AppState:
    """What the handlers share: ``engine`` is None while the server starts or stops; ``said``:
    the 400 messages already printed to stderr (each once)."""

    settings: Settings = field(default_factory=Settings)
    metrics: Metrics = field(default_factory=Metrics)
    engine: Engine | None = None
    said: set[str] = field(default_factory=set)


class Refused(Exception):
    def __init__(self, status: int, message: str, why: str = "bad_request") -> None:
        super().__init__(message)
        self.status, self.message, self.why = status, message, why


def _field(body: dict, name: str, kind: type, what: str):
    if name not in body:
        raise Refused(400, f"field {name!r} missing")
    value = body[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise Refused(400, f"field {name!r} must be {what}, got {type(value).__name__}")
    return value


def _verifier(name, field: str = "field 'verifier'") -> str:
    if not isinstance(name, str) or name not in VERIFIERS:
        raise Refused(400, f"{field} must be one of {', '.join(VERIFIERS.names())}, got "
                      f"{short(name)}")
    return name


def _flags(body: dict, n: int) -> list[bool]:
    """``finished`` per query from the optional ``truncated`` field (true: cut off at the
    length limit; OpenRLHF does not send it)."""
    flags = body.get("truncated")
    if flags is None:
        return [True] * n
    if not isinstance(flags, list) or len(flags) != n or \
            not all(isinstance(f, bool) for f in flags):
        raise Refused(400, f"field 'truncated' must be a list of {n} booleans, one per query")
    return [not f for f in flags]


# end-of-sequence markers a tokenizer decodes with its special tokens kept (OpenRLHF's query):
# <|eot_id|>, <|im_end|>, <|endoftext|> (Llama-3, Qwen, GPT), DeepSeek's <｜end▁of▁sentence｜>,
# </s> (Llama-2, Mistral), Gemma's <eos> and <end_of_turn>
_END_MARKS = re.compile(r"(?:<[|｜][^<>\s]{1,60}[|｜]>|</s>|<eos>|<end_of_turn>)\s*\Z")


def strip_prompt(query: str, prompt: str | None) -> str:
    """The response: *query* less its *prompt* prefix (the whole query without a prompt, or
    when the prompt is not its prefix) and less the end-of-sequence markers that end it
    (``_END_MARKS``; OpenRLHF decodes the query with its special tokens)."""
    response = query[len(prompt):] if prompt and query.startswith(prompt) else query
    for _ in range(8):  # a few markers at most (<|im_end|><|endoftext|>)
        m = _END_MARKS.search(response, max(0, len(response) - 200))
        if m is None:
            break
        response = response[:m.start()]
    return response


def start_engine(state: AppState) -> None:
    """Start the engine (every worker up, sandbox probed), warn on stderr about a verifier that
    cannot grade, and set ``state.engine``. Blocks (seconds)."""
    s = state.settings
    engine = Engine(s.workers, s.timeout, s.queue_size, state.metrics)
    engine.start()
    for name, why in engine.problems.items():
        print(f"dapo-bench serve: warning: the {name} verifier cannot grade ({why})",
              file=sys.stderr)
    state.engine = engine


def stop_engine(state: AppState) -> None:
    engine, state.engine = state.engine, None
    if engine is not None:
        engine.close()


@asynccontextmanager
async def lifespan(state: AppState) -> AsyncIterator[None]:
    await asyncio.get_running_loop().run_in_executor(None, start_engine, state)
    try:
        yield
    finally:
        stop_engine(state)


def _engine(state: AppState) -> Engine:
    if state.engine is None:
        raise Refused(503, "starting or stopping")
    return state.engine


async def read_body(request: Request, limit: int) -> dict:
    """The request's JSON object, at most *limit* bytes (413 past it, 400 for what is not one)."""
    size = request.headers.get("content-length", "")
    if size.isdigit() and int(size) > limit:
        raise Refused(413, f"body of {size} bytes over the limit of {limit} (--max-body-bytes)",
                      "too_large")
    chunks, n = [], 0
    async for chunk in request.stream():
        n += len(chunk)
        if n > limit:
            raise Refused(413, f"body over the limit of {limit} bytes (--max-body-bytes)",
                          "too_large")
        chunks.append(chunk)
    try:
        body = json.loads(b"".join(chunks))
    except json.JSONDecodeError as e:
        raise Refused(400, f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}")
    except UnicodeDecodeError:
        raise Refused(400, "malformed JSON: the body is not UTF-8") from None
    if not isinstance(body, dict):
        raise Refused(400, f"the body must be a JSON object, got {type(body).__name__}")
    return body


async def verified(state: AppState, groups: dict[str, list[int]], rows: list[tuple]) -> list:
    """Verdicts of *rows* in order; ``groups``: verifier -> the indices of its rows."""
    engine = _engine(state)
    if not engine.admit(len(rows)):
        raise Refused(429, f"queue full ({engine.admitted} items admitted, limit "
                      f"{engine.queue_size}); retry later", "queue_full")
    try:
        async def run(name: str, idx: list[int]) -> list:
            preds, golds, finished = ([rows[i][k] for i in idx] for k in range(3))
            return await engine.run(name, preds, golds, finished)

        names = [n for n, idx in groups.items() if idx]
        parts = await asyncio.gather(*(run(n, groups[n]) for n in names))
        out: list = [None] * len(rows)
        for name, verdicts in zip(names, parts):
            for i, v in zip(groups[name], verdicts):
                out[i] = v
        return out
    finally:
        engine.release(len(rows))


async def verify(state: AppState, body: dict) -> dict:
    """``POST /verify``: the rows ``dapo-bench verify`` writes, for *body*'s items."""
    verifier = _verifier(_field(body, "verifier", str, "a string"))
    cls = VERIFIERS.get(verifier)
    items = _field(body, "items", list, "a list")
    options = body.get("options") or {}
    if not isinstance(options, dict):
        raise Refused(400, f"field 'options' must be an object, got {type(options).__name__}")
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise Refused(400, f"options: unknown {', '.join(unknown)} (known: "
                      f"{', '.join(OPTIONS)}; the time limit is the server's --timeout)")
    explain = options.get("explain", False)
    if not isinstance(explain, bool):
        raise Refused(400, "field 'options.explain' must be true or false")
    pf, gf = cls.fields
    rows = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise Refused(400, f"items[{i}]: must be an object, got {type(item).__name__}")
        rows.append(check_item(f"items[{i}]", cls, item, pf, gf))
    verdicts = await verified(state, {verifier: list(range(len(rows)))}, rows)
    return {"results": [verdict_row(i, v, explain) for i, v in enumerate(verdicts)]}


async def get_reward(state: AppState, body: dict, verifier: str | None = None) -> dict:
    """``POST /get_reward`` (*verifier*: ``/get_reward/{verifier}``'s): OpenRLHF's rewards."""
    queries = _field(body, "query", list, "a list")
    labels = _field(body, "labels", list, "a list")
    prompts = body.get("prompts")
    if prompts is not None and not isinstance(prompts, list):
        raise Refused(400, f"field 'prompts' must be a list, got {type(prompts).__name__}")
    prompts = prompts or [None] * len(queries)
    if not len(queries) == len(labels) == len(prompts):
        raise Refused(400, f"fields 'query', 'prompts', 'labels' differ in length "
                      f"({len(queries)}, {len(prompts)}, {len(labels)})")
    finished = _flags(body, len(queries))
    named = body.get("verifier", state.settings.verifier if verifier is None else verifier)
    if "verifier" in body or named != AUTO:
        named = _verifier(named, "field 'verifier'" if "verifier" in body
                          else "the path's verifier")
    rows: list[Any] = []
    groups: dict[Any, Any] = {}
    for i, (q, p, label) in enumerate(zip(queries, prompts, labels)):
        if not isinstance(q, str) or not (p is None or isinstance(p, str)):
            raise Refused(400, f"query[{i}] and prompts[{i}] must be strings")
        try:
            name = verifier_for_label(label, f"labels[{i}]") if named == AUTO else named
            cls = VERIFIERS.get(name)
            cls.check_gold(label, f"labels[{i}]")
        except UserError as e:
            raise Refused(400, f"{e} ({LABEL_HINT})") from None
        groups.setdefault(name, []).append(i)
        rows.append((cls.input_from(strip_prompt(q, p), label, where=f"query[{i}]"),
                     label, finished[i]))
    verdicts = await verified(state, groups, rows)
    broken = [i for i, v in enumerate(verdicts) if v.infra_error]
    if broken:  # a reward is a number: a 0 here would be learned from, so nothing is
        i = broken[0]
        why = ("could not be decided within --timeout" if verdicts[i].reason == "timeout"
               else "failed in the verifier itself twice")
        raise Refused(503, f"{len(broken)} item(s) {why} (first: labels[{i}], "
                      f"{verdicts[i].reason}); nothing graded, retry", "infrastructure")
    rewards = [v.reward for v in verdicts]
    flags = {"passed": rewards,
             "truncated": [float(v.reason == "truncated") for v in verdicts],
             "no_answer": [float(v.reason == "no_answer") for v in verdicts]}
    return {"rewards": rewards, "scores": list(rewards), "extra_logs": flags,
            "reasons": [v.reason for v in verdicts]}


def health(state: AppState) -> dict:
    """``GET /health``: the workers' pids (from the verifiers' pools), the admitted items,
    whether each verifier can grade; 503 while starting or stopping."""
    engine = _engine(state)
    return {"status": "ok", "workers": engine.worker_pids(), "queue_items": engine.admitted,
            "verifiers": {n: engine.problems.get(n, "ok") for n in engine.runners}}


def metrics_page(state: AppState) -> Response:
    """``GET /metrics``: Prometheus text, the worker restarts brought up to date first."""
    if state.engine is not None:
        state.engine.worker_health()
    return Response(state.metrics.render(), media_type=state.metrics.content_type)


async def answer(state: AppState, name: str, path: str,
                 call: Callable[[], Awaitable[dict]]) -> Response:
    """The response to one request to endpoint *name*: *call*'s dict as JSON, or its refusal
    as ``{"error": ...}`` (a 400's message to stderr once, ``Retry-After`` on 429 and 503, a
    bug of ours a 500 with its trace on stderr); counted in the metrics."""
    metrics, t0 = state.metrics, time.perf_counter()
    metrics.in_flight.inc()
    headers = {}
    try:
        resp = JSONResponse(await call())
    except (Refused, UserError) as e:
        ref = e if isinstance(e, Refused) else Refused(400, str(e))
        metrics.rejected.labels(ref.why).inc()
        if ref.status == 400 and ref.message not in state.said and len(state.said) < 1000:
            state.said.add(ref.message)  # once: OpenRLHF's client logs only the status
            print(f"dapo-bench serve: refused {path} (400): {ref.message}",
                  file=sys.stderr, flush=True)
        if ref.status in (429, 503):
            headers["Retry-After"] = str(state.settings.retry_after_s)
        resp = JSONResponse({"error": ref.message}, ref.status, headers=headers)
    except Exception as e:  # noqa: BLE001  (a bug of ours: a line to the client, the trace
        # to stderr)
        traceback.print_exc()
        metrics.rejected.labels("internal").inc()
        msg = f"internal error: {type(e).__name__}: {e}".splitlines()[0][:300]
        resp = JSONResponse({"error": msg}, 500)
    finally:
        metrics.in_flight.dec()
    metrics.requests.labels(name, str(resp.status_code)).inc()
    metrics.latency.labels(name).observe(time.perf_counter() - t0)
    return resp


def _post(state: AppState, name: str, handler: Callable[..., Awaitable[dict]]):
    async def endpoint(request: Request) -> Response:
        async def call() -> dict:
            body = await read_body(request, state.settings.max_body_bytes)
            return await handler(state, body, **request.path_params)
        return await answer(state, name, request.url.path, call)
    return endpoint


def _get(state: AppState, name: str, handler: Callable[[AppState], dict]):
    async def endpoint(request: Request) -> Response:
        async def call() -> dict:
            return handler(state)
        return await answer(state, name, request.url.path, call)
    return endpoint


def build_app(settings: Settings) -> Starlette:
    """The Starlette app: routes wired to the handlers above, over one :class:`AppState`."""
    state = AppState(settings)

    async def metrics_route(request: Request) -> Response:
        return metrics_page(state)

    routes = [Route("/verify", _post(state, "verify", verify), methods=["POST"]),
              Route("/get_reward", _post(state, "get_reward", get_reward), methods=["POST"]),
              Route("/get_reward/{verifier}", _post(state, "get_reward", get_reward),
                    methods=["POST"]),
              Route("/health", _get(state, "health", health), methods=["GET"]),
              Route("/metrics", metrics_route, methods=["GET"])]
    return Starlette(routes=routes, lifespan=lambda app: lifespan(state))
