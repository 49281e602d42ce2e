"""The ``openai`` backend's options as a command takes them: :class:`ServedOptions`.

Each is declared once, here, a field with its help (``config.option``): it is a ``dapo-bench
eval`` flag (``commands.common.with_options`` makes the flags from the fields), one of the
flags that need ``--backend openai`` (:meth:`ServedOptions.given`), a keyword of the
generator (:meth:`ServedOptions.generator`), and a row of docs/tasks.md's table of the served
model's flags (``config.options_table``; tests/generation/test_openai_options.py keeps the two
equal). A field is ``None`` when its flag is not given: the generator's own default holds
(``OpenAIGenerator``), and the help says what it is.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from dapo_bench.config import field_flag, option
from dapo_bench.errors import UserError
from dapo_bench.generation.base import Generator, load_generator

# a field whose generator keyword is not its own name
KEYWORDS = {"request_timeout": "timeout"}


@dataclass(frozen=True)
class ServedOptions:
    """How ``dapo-bench eval --backend openai`` reaches and asks a served model (None: not
    given, the generator's default)."""

    base_url: str | None = option(None, "openai: the server's URL, e.g. http://127.0.0.1:8000/v1")
    api: str | None = option(
        None, "openai: chat (the server applies the chat template; default) | completions "
        "(the prompt rendered here with --tokenizer)")
    api_key_env: str | None = option(
        None, "openai: the environment variable holding the API key (default OPENAI_API_KEY, "
        "used when set); never written to a file")
    tokenizer: str | None = option(
        None, "openai --api completions: the served model's tokenizer (a directory or hub id; "
        "default: --model when it is a local directory)")
    concurrency: int | None = option(None, "openai: requests in flight (default 8)")
    request_timeout: float | None = option(
        None, "openai: seconds one request may take (default 600)")
    max_retries: int | None = option(
        None, "openai: retries of a request on 429, 5xx, timeouts and lost connections, with "
        "backoff (default 5)")
    extra_body: str | None = option(
        None, "openai: a JSON object added to every request (e.g. '{\"top_k\": 20}')")

    def given(self) -> list[str]:
        """The flags given (not None), in the order they are declared."""
        return [field_flag(f) for f in dataclasses.fields(self) if getattr(self, f.name) is not None]

    def generator(self, model: str | None) -> Generator:
        """The ``openai`` generator of these options: it asks the server for its models, so a
        wrong URL, key or model name is a one-line error naming the flag before anything is
        written."""
        from dapo_bench.generation.openai import KEY_ENV

        opts: dict[str, Any] = {KEYWORDS.get(f.name, f.name): v for f in dataclasses.fields(self)
                                if (v := getattr(self, f.name)) is not None}
        if "extra_body" in opts:
            try:
                opts["extra_body"] = json.loads(opts["extra_body"])
            except json.JSONDecodeError as e:
                raise UserError(f"--extra-body: not valid JSON ({e.msg} at char {e.pos})") from None
        opts["key_required"] = "api_key_env" in opts  # named explicitly: it must be set
        opts.setdefault("api_key_env", KEY_ENV)
        return load_generator("openai", model, **opts)
