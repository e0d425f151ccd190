"""The generator's Prometheus metrics, built from draftgen/contract/metrics.py (the names the
operator reads too). Counters start from the totals already on disk, so a dashboard never reads
zero after a restart; every series carries the job's `generationjob` and `namespace` labels."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    start_http_server,
)
from prometheus_client.metrics_core import Metric as Family
from prometheus_client.registry import Collector

from draftgen.contract import metrics as names
from draftgen.contract.metrics import Metric
from draftgen.output.ledger import Ledger
from draftgen.output.quality import DEGENERATE_REASON, chain_end, is_degenerate, reply_fact
from draftgen.output.record import Record

ERROR_KINDS = tuple(names.ErrorKind)

LATENCY_BUCKETS = (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, float("inf"))


def _counter(m: Metric, registry: CollectorRegistry) -> Counter:
    return Counter(m.name, m.help, list(m.labels), registry=registry)


def _gauge(m: Metric, registry: CollectorRegistry) -> Gauge:
    return Gauge(m.name, m.help, list(m.labels), registry=registry)


class _WithJobLabels(Collector):
    """The series of `inner`, each with the same constant labels added (prometheus_client has
    no constant labels of its own)."""

    def __init__(self, inner: CollectorRegistry, labels: Mapping[str, str]) -> None:
        self._inner = inner
        self._labels = dict(labels)

    def collect(self) -> Iterable[Family]:
        for family in self._inner.collect():
            family.samples = [
                s._replace(labels={**s.labels, **self._labels}) for s in family.samples
            ]
            yield family


def job_labels(generationjob: str | None, namespace: str | None) -> dict[str, str]:
    """The constant labels of every series; an unknown value is left out, not sent empty."""
    values = {names.GENERATIONJOB: generationjob, names.NAMESPACE: namespace}
    return {k: v for k, v in values.items() if v}


class GeneratorMetrics:
    """One registry per run (tests run several in one process). `registry` is what is served:
    the series of `own` with the job's labels."""

    def __init__(self, labels: Mapping[str, str] | None = None) -> None:
        # `*_created` series double every counter on the page and no dashboard reads them.
        # (prometheus_client's switch is process-wide; it is thrown before any counter exists.)
        disable_created_metrics()
        r = self.own = CollectorRegistry()
        self.registry = CollectorRegistry()
        self.registry.register(_WithJobLabels(r, labels or {}))
        self.samples = _counter(names.SAMPLES, r)
        self.completion_tokens = _counter(names.COMPLETION_TOKENS, r)
        self.prompt_tokens = _counter(names.PROMPT_TOKENS, r)
        self.rejects = _counter(names.REJECTS, r)
        self.tool_fallbacks = _counter(names.TOOL_FALLBACKS, r)
        self.errors = _counter(names.ERRORS, r)
        self.budget = _gauge(names.BUDGET, r)
        self.budget_remaining = _gauge(names.BUDGET_REMAINING, r)
        self.dataset_done = _gauge(names.DATASET_DONE, r)
        self.requests_in_flight = _gauge(names.REQUESTS_IN_FLIGHT, r)
        self.tokens_in_flight = _gauge(names.TOKENS_IN_FLIGHT, r)
        latency = names.REQUEST_LATENCY
        self.latency = Histogram(
            latency.name, latency.help, list(latency.labels), buckets=LATENCY_BUCKETS, registry=r
        )
        self.completion_tokens_per_second = _gauge(names.COMPLETION_TOKENS_PER_SECOND, r)
        self.eta = _gauge(names.ETA, r)
        self.job_done = _gauge(names.JOB_DONE, r)
        self.aborted = _counter(names.ABORTED, r)
        self.thinking = _counter(names.THINKING, r)
        self.tool_calls = _counter(names.TOOL_CALLS, r)
        self.replies_checked = _counter(names.REPLIES_CHECKED, r)
        self.degenerate = _counter(names.DEGENERATE, r)
        self.chains_ended = _counter(names.CHAINS_ENDED, r)
        self.completion_p95 = _gauge(names.COMPLETION_P95, r)
        for kind in ERROR_KINDS:  # present at 0 from the start: rate() and absent() work
            self.errors.labels(kind)

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:
        start_http_server(port, addr=addr, registry=self.registry)

    def start_from(self, ledger: Ledger) -> None:
        """Initialise one dataset's series from what is on disk."""
        ds = ledger.dataset
        for reason in names.FINISH_REASONS:
            self.samples.labels(ds, reason).inc(ledger.finish_reasons[reason])
        for reason in names.FINISH_REASONS:
            self.completion_tokens.labels(ds, reason).inc(ledger.completion_by_reason[reason])
        self.prompt_tokens.labels(ds).inc(ledger.prompt_tokens)
        for reason in names.RejectReason:  # every reason at 0 from the start: no "No data"
            self.rejects.labels(ds, reason.value)
        for reason, n in ledger.rejects.items():
            self.rejects.labels(ds, names.RejectReason(reason).value).inc(n)
        self.tool_fallbacks.labels(ds).inc(ledger.tool_fallbacks)
        q = ledger.quality  # the quality report's counters, from what is on disk too
        for counter, n in (
            (self.aborted, q.finish_reasons["abort"]),
            (self.thinking, q.thinking),
            (self.tool_calls, q.tool_calls),
            (self.replies_checked, q.checked),
            (self.degenerate, q.degenerate),
        ):
            counter.labels(ds).inc(n)
        for reason in names.CHAIN_ENDS_EARLY:  # at 0 from the start, as the rejects
            self.chains_ended.labels(ds, reason)
        for reason, n in q.chains_ended.items():
            self.chains_ended.labels(ds, reason).inc(n)
        self.update_dataset(ledger)
        self.update_quality(ledger)

    def record(
        self,
        ledger: Ledger,
        finish_reason: str,
        prompt_tokens: int,
        completion_tokens: int,
        latency: float,
        tool_fallback: bool = False,
    ) -> None:
        ds = ledger.dataset
        self.samples.labels(ds, finish_reason).inc()
        if tool_fallback:
            self.tool_fallbacks.labels(ds).inc()
        self.completion_tokens.labels(ds, finish_reason).inc(completion_tokens)
        self.prompt_tokens.labels(ds).inc(prompt_tokens)
        self.latency.labels(ds).observe(latency)
        self.update_dataset(ledger)

    def reject(self, dataset: str, reason: str, finish_reason: str | None = None) -> None:
        """One reject; an aborted generation and a dropped loop count in the quality series."""
        self.rejects.labels(dataset, reason).inc()
        if finish_reason == "abort":
            self.aborted.labels(dataset).inc()
        if reason == DEGENERATE_REASON:
            self.degenerate.labels(dataset).inc()

    def observe_reply(self, dataset: str, record: Record) -> None:
        """What one written record's reply holds (the quality report's counters)."""
        reasoning, tool = reply_fact(record, "reasoning"), reply_fact(record, "tool_call")
        if reasoning is not None or tool is not None:
            self.replies_checked.labels(dataset).inc()
            if reasoning:
                self.thinking.labels(dataset).inc()
            if tool:
                self.tool_calls.labels(dataset).inc()
        if is_degenerate(record):
            self.degenerate.labels(dataset).inc()
        reason = chain_end(record)
        if reason is not None:
            self.chains_ended.labels(dataset, reason).inc()

    def update_quality(self, ledger: Ledger) -> None:
        """The gauges figured from all of a dataset's lengths (not per record: a sort)."""
        p95 = ledger.quality.p95_completion
        if p95 is not None:
            self.completion_p95.labels(ledger.dataset).set(p95)

    def update_dataset(self, ledger: Ledger) -> None:
        ds = ledger.dataset
        if ledger.budget.completion_tokens is not None:
            self.budget.labels(ds).set(ledger.budget.completion_tokens)
            self.budget_remaining.labels(ds).set(ledger.remaining_completion_tokens or 0)
        self.dataset_done.labels(ds).set(1 if ledger.done else 0)
