"""The generator's Prometheus series (docs/metrics.md): names, help, label names and the closed
sets of label values, defined once.

`generator/telemetry/metrics.py` builds its prometheus_client objects from these definitions, and
docs/metrics.md is generated from them (`make metrics-doc`; tests/contract checks it is current).
The page is read back by `read_generator_page` below, the one parser `operator/readings.py` and
`draftgen top` both call: it knows the names and labels because this module owns them.
"""

from __future__ import annotations

import enum
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

from prometheus_client.metrics_core import Metric as Family
from prometheus_client.parser import text_string_to_metric_families

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError

# Label names.
DATASET = "dataset"
FINISH_REASON = "finish_reason"
REASON = "reason"
KIND = "kind"
SERVER = "server"
GENERATIONJOB = "generationjob"
NAMESPACE = "namespace"

JOB_LABELS: tuple[str, ...] = (GENERATIONJOB, NAMESPACE)
"""On every series: the GenerationJob the generator works for and its namespace (the operator
passes them; a local run takes them from the job file's metadata). A label whose value is
unknown (a local job file without a namespace) is left out."""


class RejectReason(enum.StrEnum):
    """Why a row (or a request) became a reject instead of a sample: the `reason` label of
    `draftgen_rejects_total` and the `reason` of every rejects record. Every reason's series
    exists at 0 from the start, so a panel or an alert never reads "No data"."""

    INVALID_UTF8 = "invalid_utf8"
    MALFORMED_JSON = "malformed_json"
    WRONG_TYPE = "wrong_type"
    UNREADABLE_ROW_GROUP = "unreadable_row_group"
    MISSING_FIELD = "missing_field"
    EMPTY_CONVERSATION = "empty_conversation"
    EMPTY_PROMPT = "empty_prompt"
    UNKNOWN_ROLE = "unknown_role"
    BAD_TOOLS = "bad_tools"
    BAD_TOOL_CALL = "bad_tool_call"
    BAD_TOKEN_ID = "bad_token_id"
    DUPLICATE_ID = "duplicate_id"
    TOOLS_MISSING = "tools_missing"
    MISSING_GENERATION_PREFIX = "missing_generation_prefix"
    TEMPLATE_ERROR = "template_error"
    TOOL_FALLBACK = "tool_fallback"
    PARALLEL_TOOL_CALLS = "parallel_tool_calls"
    PROMPT_TOO_LONG = "prompt_too_long"
    REQUEST_FAILED = "request_failed"
    DEGENERATE_REPETITION = "degenerate_repetition"


class ErrorKind(enum.StrEnum):
    """The `kind` label of `draftgen_errors_total` (each present at 0 from the start)."""

    CONNECT = "connect"
    TIMEOUT = "timeout"
    HTTP_5XX = "http_5xx"
    BAD_RESPONSE = "bad_response"
    ABORT = "abort"


FINISH_REASONS: tuple[str, ...] = ("stop", "length")
"""The `finish_reason` label of the sample and completion-token counters."""

CHAIN_ENDS_EARLY: tuple[str, ...] = (
    "length",
    "tool_call_diverged",
    "no_tool_call",
    "extra_tool_call",
    "missing_tool_call",
    "reply_unparsed",
)
"""The `reason` label of the chains-ended counter, each at 0 from the start (a chain can also
end at a reject reason of its next prompt, which then gets its own series)."""

MetricType = Literal["counter", "gauge", "histogram"]


@dataclass(frozen=True)
class Metric:
    """One series family as it appears on the generator's /metrics page."""

    name: str
    """Full name; for a counter the `_total` sample name, as Prometheus shows it."""

    type: MetricType
    help: str
    labels: tuple[str, ...] = ()
    """The series' own labels; `JOB_LABELS` come on top of them."""

    note: str = ""
    """What docs/metrics.md says beyond the help text."""


SAMPLES = Metric(
    "draftgen_samples_total",
    "counter",
    "samples written",
    (DATASET, FINISH_REASON),
    "`finish_reason` is `stop` or `length` (cut at maxNewTokens)",
)
COMPLETION_TOKENS = Metric(
    "draftgen_completion_tokens_total",
    "counter",
    "completion tokens of written samples",
    (DATASET, FINISH_REASON),
    "what budgets count",
)
PROMPT_TOKENS = Metric(
    "draftgen_prompt_tokens_total", "counter", "prompt tokens of written samples", (DATASET,)
)
REJECTS = Metric(
    "draftgen_rejects_total",
    "counter",
    "rows or requests rejected",
    (DATASET, REASON),
    "`reason`: one of `RejectReason` (listed below); every one present at 0",
)
TOOL_FALLBACKS = Metric(
    "draftgen_tool_fallbacks_total",
    "counter",
    "samples written whose tools the tokenizer declared in a fallback form",
    (DATASET,),
)
ERRORS = Metric(
    "draftgen_errors_total",
    "counter",
    "request errors by kind, retried or not",
    (KIND,),
    "`kind`: " + ", ".join(f"`{k}`" for k in ErrorKind) + "; every one present at 0",
)
BUDGET = Metric(
    "draftgen_budget_completion_tokens",
    "gauge",
    "the completion-token budget",
    (DATASET,),
    "absent for a dataset without a token budget",
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
COMPLETION_TOKENS_PER_SECOND = Metric(
    "draftgen_completion_tokens_per_second",
    "gauge",
    "completion tokens written per second over the last minute",
    note="the rate the ETA is computed from",
)
ETA = Metric(
    "draftgen_eta_seconds",
    "gauge",
    "seconds until every budget is met at the current rate",
    note="0 until a rate is known; stays at its last value when the rate falls to 0",
)
JOB_DONE = Metric("draftgen_job_done", "gauge", "1 when the whole job is done")

# The data-quality report (docs/quality.md); truncation and mean length come from the counters
# above: `draftgen_samples_total{finish_reason="length"}` over all samples, and completion tokens
# over samples.
ABORTED = Metric(
    "draftgen_aborted_samples_total",
    "counter",
    "samples whose last attempt SGLang ended with finish_reason abort",
    (DATASET,),
    "each is also a `request_failed` reject; every aborted attempt, retried or not, counts in "
    '`draftgen_errors_total{kind="abort"}`',
)
THINKING = Metric(
    "draftgen_thinking_samples_total",
    "counter",
    "samples written whose reply holds reasoning",
    (DATASET,),
    "read by the family's reply parser (an unknown family: by the markers, docs/quality.md)",
)
TOOL_CALLS = Metric(
    "draftgen_tool_call_samples_total",
    "counter",
    "samples written whose reply holds a tool call",
    (DATASET,),
    "read by the family's reply parser, Llama-3.1's JSON calls included (an unknown family: by "
    "its tool-call tokens, docs/quality.md)",
)
REPLIES_CHECKED = Metric(
    "draftgen_replies_checked_total",
    "counter",
    "samples written whose reply was read for reasoning and tool calls",
    (DATASET,),
    "the denominator of the thinking and tool-call shares (0: no tokenizer, or an "
    "unknown family with no markers)",
)
DEGENERATE = Metric(
    "draftgen_degenerate_samples_total",
    "counter",
    "replies caught in a loop (degenerate repetition), kept or dropped",
    (DATASET,),
    "dropped ones are also `degenerate_repetition` rejects (`onDegenerate: drop`)",
)
CHAINS_ENDED = Metric(
    "draftgen_chains_ended_total",
    "counter",
    "conversation chains that ended before their last turn, by reason",
    (DATASET, REASON),
)
COMPLETION_P95 = Metric(
    "draftgen_completion_tokens_p95",
    "gauge",
    "95th percentile (nearest rank) of written samples' completion lengths",
    (DATASET,),
    "set when the manifests are written (every few seconds and at the end)",
)

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
    COMPLETION_TOKENS_PER_SECOND,
    ETA,
    JOB_DONE,
    ABORTED,
    THINKING,
    TOOL_CALLS,
    REPLIES_CHECKED,
    DEGENERATE,
    CHAINS_ENDED,
    COMPLETION_P95,
)


# ---- reading the page back ----------------------------------------------------------------------

PREFIX = "draftgen_"
"""Every series of the generator's starts with it (tests check); other series are not its own."""


class PageError(DraftgenError, ValueError):
    """A page that is not a Prometheus text page."""

    exit_code = ExitCode.INVALID
    fix = "point at a Prometheus /metrics page (the generator's or the server's)"


def families(text: str) -> list[Family]:
    """The metric families of a Prometheus text page (any exporter's), or PageError."""
    try:
        return list(text_string_to_metric_families(text))
    except (ValueError, TypeError, IndexError) as err:
        raise PageError(f"not a Prometheus text page: {err}") from None


@dataclass(frozen=True)
class DatasetSeries:
    """One dataset's figures on the generator's page, summed over the other labels."""

    name: str
    samples: int = 0
    truncated: int = 0
    """Samples with `finish_reason` `length` (cut at maxNewTokens)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rejects: int = 0
    budget_completion_tokens: int | None = None
    """None: the dataset has no completion-token budget (the gauge is absent)."""
    done: bool = False


@dataclass(frozen=True)
class GeneratorPage:
    """What the generator's `/metrics` page says."""

    datasets: tuple[DatasetSeries, ...] = ()
    """Every dataset any series names, in the page's order: the order the generator opened
    them, which is spec order."""
    servers: tuple[str, ...] = ()
    """The server URLs it sends to (the `server` label of its in-flight gauge)."""
    throughput: float | None = None
    """Completion tokens/s over the last minute (None: absent or not a finite number)."""
    eta_seconds: float | None = None
    """None: absent or not finite (an infinite ETA is unknown, not a number)."""
    job_done: bool | None = None
    """None: the gauge is absent."""
    series: int = 0
    """draftgen_* samples on the page (0: the page has none of the generator's series)."""


_COUNTS = {
    SAMPLES.name: "samples",
    COMPLETION_TOKENS.name: "completion_tokens",
    PROMPT_TOKENS.name: "prompt_tokens",
    REJECTS.name: "rejects",
}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def read_generator_page(text: str) -> GeneratorPage:
    """The generator's `/metrics` page → per-dataset figures and the job's gauges. A page that is
    not Prometheus text raises PageError; one without the generator's series reads as empty."""
    order: dict[str, None] = {}
    counts: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    budget: dict[str, int] = {}
    done: dict[str, bool] = {}
    servers: dict[str, None] = {}
    throughput = eta = None
    job_done = None
    series = 0
    for family in families(text):
        for s in family.samples:
            if not s.name.startswith(PREFIX):
                continue
            series += 1
            ds = s.labels.get(DATASET)
            if ds:
                order.setdefault(ds, None)
                if s.name in _COUNTS:
                    counts[ds][_COUNTS[s.name]] += s.value
                    if s.name == SAMPLES.name and s.labels.get(FINISH_REASON) == "length":
                        counts[ds]["truncated"] += s.value
                elif s.name == BUDGET.name:
                    budget[ds] = int(s.value)
                elif s.name == DATASET_DONE.name:
                    done[ds] = s.value >= 1
            elif s.name == REQUESTS_IN_FLIGHT.name and s.labels.get(SERVER):
                servers.setdefault(s.labels[SERVER], None)
            elif s.name == COMPLETION_TOKENS_PER_SECOND.name:
                throughput = _finite(s.value)
            elif s.name == ETA.name:
                eta = _finite(s.value)
            elif s.name == JOB_DONE.name:
                job_done = s.value >= 1
    datasets = tuple(
        DatasetSeries(
            name=name,
            samples=int(counts[name]["samples"]),
            truncated=int(counts[name]["truncated"]),
            prompt_tokens=int(counts[name]["prompt_tokens"]),
            completion_tokens=int(counts[name]["completion_tokens"]),
            rejects=int(counts[name]["rejects"]),
            budget_completion_tokens=budget.get(name),
            done=done.get(name, False),
        )
        for name in order
    )
    return GeneratorPage(datasets, tuple(servers), throughput, eta, job_done, series)
