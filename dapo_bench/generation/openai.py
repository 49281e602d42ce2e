"""The ``openai`` backend: a model served behind the OpenAI protocol (``vllm serve``, SGLang,
TGI, ``transformers serve``, a hosted API), over HTTP, text in and text out.

- **Endpoints.** ``api="chat"`` posts ``/chat/completions`` with the task's messages (system +
  user turn) and the server applies the chat template; ``api="completions"`` posts
  ``/completions`` with the prompt the task rendered with the local tokenizer (``tokenizer``,
  default the model when it is a local directory), exactly the text the in-process backends
  encode. A server's ``usage.prompt_tokens`` is checked against that text's ids
  (``models.encode_prompt``): a difference (a server that adds a second BOS) is counted in
  :meth:`provenance` as ``prompt_tokens_differ``.
- **One request per sample**, ``n`` of them per prompt, each with its own seed
  (``base.row_seed``: seed, prompt, occurrence, sample), because several servers ignore ``n``
  (``transformers serve``) and a seed per request makes each sample reproducible alone.
  Sampling: ``temperature`` (0 = greedy), ``top_p``, ``max_tokens``, ``seed`` (not sent when
  greedy), ``stop``; the
  stop string is cut from the text here too (``transformers serve`` leaves it in). A
  ``finish_reason`` of ``length`` is a completion cut at the cap (``"length"``, verified as
  the in-process backends' are); ``abort``/``error`` is no answer (retried like a 5xx); any
  other reason is ``"stop"``; the server's own word is kept in ``Completion.meta``.
- **Thinking**: a ``reasoning_content`` (or ``reasoning``) field of a chat answer is kept apart
  as ``Completion.reasoning``; the verifier never reads it (``verifiers.base.answer_text`` is the
  one rule for thinking written into the text).
- **Faults.** ``concurrency`` requests in flight; retries, backoff and the per-request timeout
  are ``generation.http``'s. A request that fails for good is a completion with ``error`` set:
  the eval counts it as an infrastructure error, leaves its problem out of the metrics and
  sends it again on the next run. A refused connection after every retry means the server is
  gone: the call stops (:class:`ServerUnavailable`) with the answered requests kept. A 4xx is
  the user's to fix (bad model name, prompt over the context): one-line ``UserError``.
- **Resume**: :meth:`keep_responses` logs every answer (JSONL, keyed by a hash of the request
  body); a request whose key is in the log is answered from it, so a rerun sends only the
  requests whose answers are missing.
- **The API key** is read from the environment variable ``api_key_env`` and sent as a bearer
  header; nothing this backend writes or returns contains it.

What it cannot give: the generated token ids and their log-probs (``token_ids = False``), so
training, which scores exactly the ids it sampled, refuses this backend; prompts as token ids
are sent as such to ``/completions`` (vLLM and SGLang take them), never re-decoded.
Not covered: streaming, tool calls, images, ``best_of``, servers that need a body field the
standard does not name (``extra_body`` passes one through).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dapo_bench.errors import RunStopped, UserError
from dapo_bench.generation.base import (
    GENERATORS,
    Completion,
    Generator,
    Prompt,
    SamplingParams,
    cut_at_stop,
    row_seeds,
)
from dapo_bench.generation.http import Client, Failure, Rejected, in_flight, redact_url
from dapo_bench.io import JsonlAppender, iter_jsonl

APIS = {"chat": "/chat/completions", "completions": "/completions"}
KEY_ENV = "OPENAI_API_KEY"
ABORTED = ("abort", "error")  # a 200 whose generation the server gave up (vLLM under pressure)


class ServerUnavailable(RunStopped):
    """The server stopped answering (refused connections after every retry)."""


def check_base_url(url: str | None) -> str:
    """``--base-url``: an http(s) URL with a host (trailing ``/`` dropped)."""
    from urllib.parse import urlsplit

    if not url:
        raise UserError("--backend openai needs --base-url URL (e.g. http://127.0.0.1:8000/v1)")
    p = urlsplit(url)
    if p.scheme not in ("http", "https") or not p.hostname:
        raise UserError(f"--base-url {redact_url(url)!r}: expected http(s)://HOST[:PORT]/PATH")
    return url.rstrip("/")


def read_key(api_key_env: str, required: bool) -> str | None:
    """The API key from ``$api_key_env`` (None when unset and not ``required``)."""
    key = os.environ.get(api_key_env) or None
    if key is None and required:
        raise UserError(f"--api-key-env {api_key_env}: the environment variable is not set")
    return key


def served_models(client: Client) -> list[str] | None:
    """The ids ``GET /models`` lists (None: the server has no such endpoint); a user error
    naming the flag when the server cannot be reached or refuses the key."""
    import httpx

    where = f"--base-url {redact_url(client.base_url)}"
    try:
        data = client.get_json("/models")
    except Rejected as e:
        if e.status in (401, 403):
            raise UserError(f"--api-key-env: the server at {redact_url(client.base_url)} "
                            f"refused the key ({e})") from None
        return None
    except httpx.HTTPError as e:
        raise UserError(f"{where}: cannot reach the server ({type(e).__name__}: "
                        f"{client.scrub(str(e))})") from None
    except ValueError:
        return None
    rows = data.get("data") if isinstance(data, dict) else None
    return [str(m["id"]) for m in rows if isinstance(m, dict) and "id" in m] if rows else None


def resolve_model(model: str | None, listed: list[str] | None, base_url: str) -> str:
    """The model name to request: ``--model``, checked against what the server lists, or
    the server's only model."""
    where = redact_url(base_url)
    if model is None:
        if listed and len(listed) == 1:
            return listed[0]
        raise UserError(f"--model is required with --backend openai (the server at {where} "
                        f"serves {', '.join(listed) if listed else 'models it does not list'})")
    if listed is not None and model not in listed:
        raise UserError(f"--model {model!r}: the server at {where} serves "
                        f"{', '.join(listed) or 'no model'}")
    return model


def request_key(api: str, body: dict) -> str:
    return hashlib.sha256(json.dumps([api, body], sort_keys=True).encode()).hexdigest()[:32]


@GENERATORS.register(
    "openai", help="an OpenAI-compatible server (vLLM, SGLang, TGI, transformers serve, a "
    "hosted API): text only, requests in flight, retries")
class OpenAIGenerator(Generator):
    """Options: ``base_url`` (ending in ``/v1`` for most servers), ``api`` (chat |
    completions), ``api_key_env`` (the variable holding the key; ``key_required``: its absence
    is an error), ``tokenizer`` (completions: renders the prompt), ``concurrency`` (requests
    in flight), ``timeout`` (seconds per request), ``max_retries``, ``backoff`` (first wait,
    seconds), ``extra_body`` (fields added to every request, e.g. vLLM's ``top_k``)."""

    backend = "openai"
    token_ids = False

    def __init__(self, model: str | None = None, *, base_url: str | None = None,
                 api: str = "chat", api_key_env: str = KEY_ENV, key_required: bool = False,
                 tokenizer: str | None = None, concurrency: int = 8, timeout: float = 600.0,
                 max_retries: int = 5, backoff: float = 1.0,
                 extra_body: dict[str, Any] | None = None):
        if api not in APIS:
            raise UserError(f"--api must be chat or completions, got {api!r}")
        for flag, v, low in (("--concurrency", concurrency, 1), ("--max-retries", max_retries, 0)):
            if v < low:
                raise UserError(f"{flag} must be at least {low}, got {v}")
        if not timeout > 0:
            raise UserError(f"--request-timeout must be > 0 seconds, got {timeout:g}")
        if extra_body is not None and not isinstance(extra_body, dict):
            raise UserError("--extra-body must be a JSON object")
        self.base_url = check_base_url(base_url)
        self.api, self.concurrency = api, concurrency
        self.extra_body = dict(extra_body or {})
        self.prompt_format = "messages" if api == "chat" else "text"
        self._client = Client(self.base_url, key=read_key(api_key_env, key_required),
                              concurrency=concurrency, timeout=timeout,
                              max_retries=max_retries, backoff=backoff)
        self._settings = {"concurrency": concurrency, "timeout": timeout,
                          "max_retries": max_retries}
        self.listed = served_models(self._client)
        self.model = resolve_model(model, self.listed, self.base_url)
        self.model_path = self.model
        self.model_hash = f"openai:{self.model}"
        tok = tokenizer or (self.model if Path(self.model).is_dir() else None)
        if api == "completions" and tok is None:
            raise UserError("--api completions renders the prompt here: it needs --tokenizer "
                            "PATH (the served model's tokenizer directory or hub id)")
        self._tok_path, self._tok = tok, None
        self._log: JsonlAppender | None = None
        self._logged: dict[str, dict] = {}
        self._lock = threading.Lock()
        self.stats: Counter[str] = Counter()
        self.finish_reasons: Counter[str] = Counter()
        self.models_reported: Counter[str] = Counter()
        self.last_prompt_tokens = self.last_generated_tokens = 0

    # ----------------------------------------------------------------- interface
    @property
    def tokenizer(self) -> Any:
        """The local tokenizer (completions; chat: the one named by ``tokenizer``, if any)."""
        if self._tok is None and self._tok_path is not None:
            from dapo_bench.models import load_tokenizer

            self._tok = load_tokenizer(self._tok_path)
        return self._tok

    @property
    def n_params(self) -> int | None:
        return None  # a server does not say

    def fingerprint(self) -> dict[str, Any]:
        fp: dict[str, Any] = {"api": self.api, "extra_body": self.extra_body}
        if self.api == "completions":  # the template that renders the prompt here
            from dapo_bench.provenance import hash_bytes

            template = getattr(self.tokenizer, "chat_template", None) or ""
            fp["chat_template"] = hash_bytes(str(template).encode())
        return fp

    def provenance(self) -> dict[str, Any]:
        c = self._client
        return {"base_url": redact_url(self.base_url), "api": self.api, "model": self.model,
                "models_listed": self.listed, "models_reported": dict(self.models_reported),
                **self._settings, "extra_body": self.extra_body,
                "requests": {"sent": c.sent, "answered": self.stats["answered"],
                             "from_log": self.stats["from_log"],
                             "retried": dict(c.retries), "failed": dict(c.failures)},
                "finish_reasons": dict(self.finish_reasons),
                "prompt_tokens_differ": self.stats["prompt_tokens_differ"]}

    def keep_responses(self, path: Any) -> None:
        path = Path(path)
        if path.exists():
            for row in iter_jsonl(path, allow_partial_tail=True):
                self._logged[row["key"]] = row["answer"]
        self._log = JsonlAppender(path)

    def close(self) -> None:
        self._client.stop.set()
        self._client.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    # ----------------------------------------------------------------- generation
    def generate(self, prompts: list[Prompt], params: SamplingParams) -> list[list[Completion]]:
        _ = self.tokenizer  # loaded once, before the threads start
        keys = [p if isinstance(p, str) else json.dumps(p) for p in prompts]
        jobs = []  # (prompt index, body, prompt text or None): one request per sample
        for i, (p, seeds) in enumerate(zip(prompts, row_seeds(params.seed, keys, params.n))):
            for seed in seeds:
                jobs.append((i, self._body(p, params, seed % (2 ** 31)),
                             p if isinstance(p, str) else None))
        out: list[list[Completion]] = [[] for _ in prompts]
        fatal: list[BaseException] = []

        def run(job):
            i, body, text = job
            if fatal:
                return i, None
            try:
                return i, self._ask(body, text, params.stop)
            except (Rejected, Failure) as e:
                if isinstance(e, Rejected) or e.cause == "connect":
                    fatal.append(e)
                    self._client.stop.set()  # the others give up their waits
                    return i, None
                return i, Completion("", 0, "error", error=f"{e.cause}: {e}")

        try:
            done = in_flight(run, jobs, self.concurrency)
        except BaseException:  # Ctrl-C: waits end now; the workers are daemons
            self._client.stop.set()
            raise
        if fatal:
            self._client.stop.clear()
            e = fatal[0]
            if isinstance(e, Rejected):
                hint = " (check --model)" if e.status == 404 else ""
                raise UserError(f"the server at {redact_url(self.base_url)} refused a request: "
                                f"{e}{hint}") from None
            raise ServerUnavailable(
                f"the server at {redact_url(self.base_url)} stopped answering ({e}); the "
                f"answers so far are kept: start it again and rerun the command to resume")
        for i, comp in done:
            out[i].append(comp)
        self.last_generated_tokens = sum(c.n_tokens for cs in out for c in cs)
        return out

    def _body(self, prompt: Prompt, params: SamplingParams, seed: int) -> dict:
        body: dict[str, Any] = {"model": self.model}
        if self.api == "chat":
            if isinstance(prompt, str) or not all(isinstance(m, dict) for m in prompt):
                raise UserError("--api chat sends a chat (messages); this prompt is rendered "
                                "text or token ids: use --api completions")
            chat: Sequence[Any] = prompt  # messages, checked above (Prompt does not name chats)
            body["messages"] = [dict(m) for m in chat]
        else:
            body["prompt"] = prompt if isinstance(prompt, str) else [int(t) for t in prompt]
        body.update(max_tokens=params.max_new_tokens, temperature=params.temperature,
                    top_p=params.top_p if params.temperature > 0 else 1.0)
        if params.temperature > 0:  # greedy needs none (and vLLM's seeded path is slower)
            body["seed"] = seed
        stop = [s for s in params.stop if s]
        if stop:
            body["stop"] = stop
        body.update(self.extra_body)
        return body

    def _ask(self, body: dict, text: str | None, stop: tuple[str, ...]) -> Completion:
        key = request_key(self.api, body)
        answer = self._logged.get(key)
        if answer is not None:
            with self._lock:
                self.stats["from_log"] += 1
        else:
            answer = self._answer(self._client.post_json(APIS[self.api], body))
            tries = 0
            while answer["finish_reason"] in ABORTED:  # the server gave up on it: no answer
                if tries >= self._client.max_retries:
                    with self._lock:
                        self._client.failures["aborted"] += 1
                    raise Failure("aborted", f"finish_reason {answer['finish_reason']!r} "
                                  f"(after {tries + 1} tries)")
                tries += 1
                with self._lock:
                    self._client.retries["aborted"] += 1
                answer = self._answer(self._client.post_json(APIS[self.api], body))
            with self._lock:
                self.stats["answered"] += 1
                if self._log is not None:
                    self._log.write({"key": key, "answer": answer})
                self._logged[key] = answer
        return self._completion(answer, text, stop)

    def _answer(self, data: dict) -> dict:
        """The parts of a server's answer a sample keeps (what the log stores)."""
        choices = data.get("choices") or []
        if not choices or not isinstance(choices[0], dict):
            raise Failure("bad_response", "the answer has no choices")
        ch = choices[0]
        if self.api == "chat":
            msg = ch.get("message") or {}
            content = msg.get("content")
            reasoning = msg.get("reasoning_content") or msg.get("reasoning")
        else:
            content, reasoning = ch.get("text"), None
        usage = data.get("usage") or {}
        return {"text": self._client.scrub(content or ""),
                "reasoning": self._client.scrub(reasoning) if reasoning else None,
                "finish_reason": ch.get("finish_reason"), "model": data.get("model"),
                "prompt_tokens": usage.get("prompt_tokens"),
                "completion_tokens": usage.get("completion_tokens")}

    def _completion(self, a: dict, prompt_text: str | None, stop: tuple[str, ...]) -> Completion:
        text, _ = cut_at_stop(a["text"], stop)
        n = a.get("completion_tokens")
        tok = self.tokenizer
        with self._lock:  # one tokenizer, several threads
            self.finish_reasons[str(a.get("finish_reason"))] += 1
            self.models_reported[str(a.get("model"))] += 1
            if n is None and tok is not None:  # a server that reports no usage
                n = len(tok(a["text"], add_special_tokens=False)["input_ids"])
            if prompt_text is not None and a.get("prompt_tokens") is not None and tok is not None:
                from dapo_bench.models import encode_prompt

                if len(encode_prompt(tok, prompt_text)) != a["prompt_tokens"]:
                    self.stats["prompt_tokens_differ"] += 1
        meta = {k: a.get(k) for k in ("finish_reason", "prompt_tokens", "completion_tokens",
                                      "model")}
        return Completion(text=text, n_tokens=int(n or 0),
                          finish_reason="length" if a.get("finish_reason") == "length"
                          else "stop", reasoning=a.get("reasoning"), meta=meta)
