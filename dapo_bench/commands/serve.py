"""``dapo-bench serve``: the verifiers as an HTTP reward server (uvicorn + Starlette).

Loopback only unless ``--allow-remote`` is given with a non-loopback ``--host``; see
docs/serve.md for the endpoints, error codes and metrics. SIGTERM (or Ctrl-C) stops
accepting, finishes the requests in flight, stops the workers; SIGTERM then exits 0. Its flags
are the fields of :class:`ServeOptions`, each declared once with its help.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import typer

from dapo_bench.commands.common import examples, options_of, with_options
from dapo_bench.config import option

EXAMPLES = examples("""
    dapo-bench serve                                  # 127.0.0.1:8000, all cores
    dapo-bench serve --port 5000 --workers 4 --verifier code   # /get_reward grades code only
    dapo-bench serve --host 0.0.0.0 --allow-remote    # reachable from other machines
""")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class ServeOptions:
    """``dapo-bench serve``'s flags, each declared once, here, with its help: a flag
    (:func:`register` makes them from the fields) and a row of docs/serve.md's options table
    (``config.options_table``; tests/commands/test_command_options.py keeps the two equal)."""

    host: str = option(
        "127.0.0.1", "address to listen on; other than loopback only with --allow-remote")
    port: int = option(8000, "TCP port (0: any free port, printed)")
    workers: int | None = option(
        None, "verifier worker processes per verifier: N sympy workers and N code-sandbox "
        "workers (default: all cores)")
    verifier: str = option(
        "auto", "/get_reward's verifier when neither the request nor the path names one: a "
        "registered verifier (math | code), or auto: each label's by its shape (a JSON object "
        "or a list of objects: code tests; a string or a number: a math gold)")
    timeout: float | None = option(
        None, "seconds per item, as 'dapo-bench verify --timeout' (verifier's default)")
    queue_size: int = option(
        4096, "items admitted at once; a request over it gets 429 + Retry-After")
    max_body_bytes: int = option(16 << 20, "largest request body; a larger one gets 413")
    allow_remote: bool = option(
        False, "allow a non-loopback --host (the server has no authentication)")


def register(app: typer.Typer, option_cls: type = ServeOptions) -> None:
    """Add ``serve`` to *app*, its flags made from *option_cls*' fields (``ServeOptions``; the
    tests pass a subclass with a field added)."""

    def serve_cmd(**values: Any) -> None:
        """Serve the verifiers over HTTP: /verify, /get_reward (OpenRLHF), /health, /metrics.

        \b
        curl -s localhost:8000/verify -d '{"verifier": "math",
          "items": [{"prediction": "so x = 2", "gold": "2"}]}'
        OpenRLHF >= 0.10.2: --reward.remote_url http://127.0.0.1:8000/get_reward
          --data.label_key <the dataset's gold column>
        (body {"query", "prompts", "labels"}; answer {"rewards", "scores", "extra_logs"})
        Endpoints, error codes and metrics: docs/serve.md.
        """
        import os
        import signal

        from dapo_bench.errors import UserError

        o = options_of(option_cls, values)
        host, port, workers, verifier, timeout = o.host, o.port, o.workers, o.verifier, o.timeout
        queue_size, max_body_bytes = o.queue_size, o.max_body_bytes
        if host not in LOOPBACK and not o.allow_remote:
            raise UserError(f"--host {host} is not loopback: the server has no authentication; "
                            "pass --allow-remote to listen there anyway")
        from dapo_bench.verifiers.base import VERIFIERS

        if verifier != "auto" and verifier not in VERIFIERS:
            raise UserError(f"--verifier must be auto or one of {', '.join(VERIFIERS.names())}, "
                            f"got {verifier!r}")
        for flag, val in (("--workers", workers), ("--timeout", timeout),
                          ("--queue-size", queue_size), ("--max-body-bytes", max_body_bytes)):
            if val is not None and val <= 0:
                raise UserError(f"{flag} must be > 0, got {val:g}")
        if not 0 <= port <= 65535:
            raise UserError(f"--port must be in 0..65535, got {port}")
        try:
            import uvicorn

            from dapo_bench.serve.app import Settings, build_app
        except ImportError as e:
            raise UserError(f"dapo-bench serve needs the serve extra: pip install "
                            f"'dapo-bench[serve]' ({e})") from None
        settings = Settings(workers=workers or os.cpu_count() or 1, timeout=timeout,
                            queue_size=queue_size, max_body_bytes=max_body_bytes,
                            verifier=verifier)
        config = uvicorn.Config(build_app(settings), host=host, port=port, workers=1,
                                log_level="warning", access_log=False, lifespan="on",
                                timeout_graceful_shutdown=None)
        server = uvicorn.Server(config)
        # uvicorn re-raises a captured SIGTERM after its graceful shutdown; with this handler
        # in place that ends here, and the command exits 0 (SIGINT keeps its Ctrl-C exit)
        signal.signal(signal.SIGTERM, lambda *_: None)
        _announce(server)
        server.run()
        if not server.started:
            raise UserError(f"could not serve on {host}:{port} (see the message above)")

    def _announce(server) -> None:
        """Print the address once listening (port 0 resolves to the port the OS chose)."""
        import sys

        startup = server.startup

        async def startup_and_say(sockets=None):
            await startup(sockets=sockets)
            if server.started:
                for s in server.servers:
                    for sock in s.sockets:
                        host, port = sock.getsockname()[:2]
                        sys.stdout.write(f"dapo-bench serve: listening on http://{host}:{port}\n")
                        sys.stdout.flush()

        server.startup = startup_and_say

    app.command("serve", epilog=EXAMPLES)(with_options(serve_cmd, option_cls))
