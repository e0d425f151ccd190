"""The generator's Prometheus metrics, exactly the names of docs/metrics.md. Counters start from
the totals already on disk, so a dashboard never reads zero after a restart."""

from __future__ import annotations

from prometheus_client import (CollectorRegistry, Counter, Gauge, Histogram,
                               disable_created_metrics, start_http_server)

from .budget import Ledger

# `*_created` series double every counter on the page and no dashboard reads them.
disable_created_metrics()

ERROR_KINDS = ("connect", "timeout", "http_5xx", "bad_response", "abort")

LATENCY_BUCKETS = (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, float("inf"))


class GeneratorMetrics:
    """One registry per run (tests run several in one process)."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.samples = Counter("draftgen_samples_total", "samples written",
                               ["dataset", "finish_reason"], registry=r)
        self.completion_tokens = Counter("draftgen_completion_tokens_total",
                                         "completion tokens of written samples",
                                         ["dataset", "finish_reason"], registry=r)
        self.prompt_tokens = Counter("draftgen_prompt_tokens_total",
                                     "prompt tokens of written samples", ["dataset"], registry=r)
        self.rejects = Counter("draftgen_rejects_total", "rows or requests rejected",
                               ["dataset", "reason"], registry=r)
        self.errors = Counter("draftgen_errors_total", "request errors by kind, retried or not",
                              ["kind"], registry=r)
        self.budget = Gauge("draftgen_budget_completion_tokens", "the completion-token budget",
                            ["dataset"], registry=r)
        self.budget_remaining = Gauge("draftgen_budget_remaining_completion_tokens",
                                      "budget minus tokens written (negative: overshoot)",
                                      ["dataset"], registry=r)
        self.dataset_done = Gauge("draftgen_dataset_done",
                                  "1 once the dataset met a budget or ran out of rows",
                                  ["dataset"], registry=r)
        self.requests_in_flight = Gauge("draftgen_requests_in_flight",
                                        "requests sent and not answered", ["server"], registry=r)
        self.tokens_in_flight = Gauge("draftgen_tokens_in_flight",
                                      "predicted prompt + completion tokens in flight",
                                      ["server"], registry=r)
        self.latency = Histogram("draftgen_request_latency_seconds",
                                 "end-to-end latency of successful requests", ["dataset"],
                                 buckets=LATENCY_BUCKETS, registry=r)
        self.throughput = Gauge("draftgen_throughput_tokens_per_second",
                                "completion tokens/s over the last minute", registry=r)
        self.eta = Gauge("draftgen_eta_seconds",
                         "seconds until every budget is met at the current rate", registry=r)
        self.job_done = Gauge("draftgen_job_done", "1 when the whole job is done", registry=r)
        for kind in ERROR_KINDS:  # present at 0 from the start: rate() and absent() work
            self.errors.labels(kind)

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:
        start_http_server(port, addr=addr, registry=self.registry)

    def start_from(self, ledger: Ledger) -> None:
        """Initialise one dataset's series from what is on disk."""
        ds = ledger.dataset
        for reason in ("stop", "length"):
            self.samples.labels(ds, reason).inc(ledger.finish_reasons[reason])
        for reason in ("stop", "length"):
            self.completion_tokens.labels(ds, reason).inc(ledger.completion_by_reason[reason])
        self.prompt_tokens.labels(ds).inc(ledger.prompt_tokens)
        for reason, n in ledger.rejects.items():
            self.rejects.labels(ds, reason).inc(n)
        self.update_dataset(ledger)

    def record(self, ledger: Ledger, finish_reason: str, prompt_tokens: int,
               completion_tokens: int, latency: float) -> None:
        ds = ledger.dataset
        self.samples.labels(ds, finish_reason).inc()
        self.completion_tokens.labels(ds, finish_reason).inc(completion_tokens)
        self.prompt_tokens.labels(ds).inc(prompt_tokens)
        self.latency.labels(ds).observe(latency)
        self.update_dataset(ledger)

    def update_dataset(self, ledger: Ledger) -> None:
        ds = ledger.dataset
        if ledger.budget.completion_tokens is not None:
            self.budget.labels(ds).set(ledger.budget.completion_tokens)
            self.budget_remaining.labels(ds).set(ledger.remaining_completion_tokens or 0)
        self.dataset_done.labels(ds).set(1 if ledger.done else 0)
