"""The generator's Prometheus series (docs/metrics.md): names, help and label names, defined once.

`generator/metrics.py` builds its prometheus_client objects from these definitions and
`operator/progress.py` reads the scraped page by the same names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# Label names.
DATASET = "dataset"
FINISH_REASON = "finish_reason"
REASON = "reason"
KIND = "kind"
SERVER = "server"

MetricType = Literal["counter", "gauge", "histogram"]


@dataclass(frozen=True)
class Metric:
    """One series family as it appears on the generator's /metrics page."""

    name: str
    """Full name; for a counter the `_total` sample name, as Prometheus shows it."""

    type: MetricType
    help: str
    labels: tuple[str, ...] = ()


SAMPLES = Metric("draftgen_samples_total", "counter", "samples written", (DATASET, FINISH_REASON))
COMPLETION_TOKENS = Metric(
    "draftgen_completion_tokens_total",
    "counter",
    "completion tokens of written samples",
    (DATASET, FINISH_REASON),
)
PROMPT_TOKENS = Metric(
    "draftgen_prompt_tokens_total", "counter", "prompt tokens of written samples", (DATASET,)
)
REJECTS = Metric(
    "draftgen_rejects_total", "counter", "rows or requests rejected", (DATASET, REASON)
)
TOOL_FALLBACKS = Metric(
    "draftgen_tool_fallbacks_total",
    "counter",
    "samples written whose tools the tokenizer declared in a fallback form",
    (DATASET,),
)
ERRORS = Metric(
    "draftgen_errors_total", "counter", "request errors by kind, retried or not", (KIND,)
)
BUDGET = Metric(
    "draftgen_budget_completion_tokens", "gauge", "the completion-token budget", (DATASET,)
)
BUDGET_REMAINING = Metric(
    "draftgen_budget_remaining_completion_tokens",
    "gauge",
    "budget minus tokens written (negative: overshoot)",
    (DATASET,),
)
DATASET_DONE = Metric(
    "draftgen_dataset_done",
    "gauge",
    "1 once the dataset met a budget or ran out of rows",
    (DATASET,),
)
REQUESTS_IN_FLIGHT = Metric(
    "draftgen_requests_in_flight", "gauge", "requests sent and not answered", (SERVER,)
)
TOKENS_IN_FLIGHT = Metric(
    "draftgen_tokens_in_flight",
    "gauge",
    "predicted prompt + completion tokens in flight",
    (SERVER,),
)
REQUEST_LATENCY = Metric(
    "draftgen_request_latency_seconds",
    "histogram",
    "end-to-end latency of successful requests",
    (DATASET,),
)
THROUGHPUT = Metric(
    "draftgen_throughput_tokens_per_second", "gauge", "completion tokens/s over the last minute"
)
ETA = Metric(
    "draftgen_eta_seconds", "gauge", "seconds until every budget is met at the current rate"
)
JOB_DONE = Metric("draftgen_job_done", "gauge", "1 when the whole job is done")

ALL: tuple[Metric, ...] = (
    SAMPLES,
    COMPLETION_TOKENS,
    PROMPT_TOKENS,
    REJECTS,
    TOOL_FALLBACKS,
    ERRORS,
    BUDGET,
    BUDGET_REMAINING,
    DATASET_DONE,
    REQUESTS_IN_FLIGHT,
    TOKENS_IN_FLIGHT,
    REQUEST_LATENCY,
    THROUGHPUT,
    ETA,
    JOB_DONE,
)
