"""The server's Prometheus metrics (``GET /metrics``), on a registry of their own.

Names (all prefixed ``dapo_serve_``): ``requests_total{endpoint,code}``,
``request_seconds{endpoint}`` (histogram), ``items_total{verifier}``,
``verdicts_total{verifier,reason}``, ``queue_items`` (items admitted and not yet answered),
``in_flight_requests``, ``rejected_total{why}`` (queue_full, too_large, bad_request,
infrastructure, internal), ``items_rerun_total{verifier}`` (items whose verdict was an
infrastructure error and were run again), ``worker_restarts_total{verifier}`` (verifier worker processes that ended while
the server ran, as the verifiers' own pools count them, brought up to date when ``/metrics`` or
``/health`` is read; each verifier replaces its worker on next use).
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

disable_created_metrics()  # no *_created series: one line per counter, as scrapers expect
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        p = "dapo_serve_"
        self.requests = Counter(p + "requests", "HTTP requests answered", ["endpoint", "code"],
                                registry=r)
        self.latency = Histogram(p + "request_seconds", "request latency", ["endpoint"],
                                 buckets=BUCKETS, registry=r)
        self.items = Counter(p + "items", "items verified", ["verifier"], registry=r)
        self.verdicts = Counter(p + "verdicts", "verdicts by reason", ["verifier", "reason"],
                                registry=r)
        self.queue = Gauge(p + "queue_items", "items admitted and not yet answered", registry=r)
        self.in_flight = Gauge(p + "in_flight_requests", "requests being served", registry=r)
        self.rejected = Counter(p + "rejected", "requests refused", ["why"], registry=r)
        self.rerun = Counter(p + "items_rerun", "items run again after an infrastructure error",
                             ["verifier"], registry=r)
        self.restarts = Counter(p + "worker_restarts", "verifier worker processes that ended",
                                ["verifier"], registry=r)

    def render(self) -> bytes:
        return generate_latest(self.registry)
