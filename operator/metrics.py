"""The operator's own Prometheus metrics (prefix `draftgen_operator_`), on their own registry.

| metric | type | labels | meaning |
|---|---|---|---|
| `draftgen_operator_jobs` | gauge | phase | GenerationJobs this operator handles, by phase |
| `draftgen_operator_job_phase` | gauge | namespace, generationjob, phase | 1 for each job's current phase (one series per job: alerts on a failed or stuck job) |
| `draftgen_operator_reconcile_errors_total` | counter | kind | reconciles that raised (`api`, `other`) |
| `draftgen_operator_reconcile_duration_seconds` | histogram | | time of one reconcile |
| `draftgen_operator_reconciles_total` | counter | | reconciles run |

Served on `DRAFTGEN_OPERATOR_METRICS_ADDRESS` (default 127.0.0.1; the chart sets 0.0.0.0).
Liveness is kopf's own endpoint (`draftgen operator --liveness http://0.0.0.0:8081/healthz`).
"""

from __future__ import annotations

import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from draftgen.spec import PHASES

REGISTRY = CollectorRegistry(auto_describe=True)

JOBS = Gauge(
    "draftgen_operator_jobs",
    "GenerationJobs handled by this operator, by phase",
    ["phase"],
    registry=REGISTRY,
)
JOB_PHASE = Gauge(
    "draftgen_operator_job_phase",
    "1 for the current phase of each GenerationJob (the series of a job's earlier phase goes)",
    ["namespace", "generationjob", "phase"],
    registry=REGISTRY,
)
RECONCILE_ERRORS = Counter(
    "draftgen_operator_reconcile_errors",
    "Reconciles that raised, by kind (api, other)",
    ["kind"],
    registry=REGISTRY,
)
RECONCILE_DURATION = Histogram(
    "draftgen_operator_reconcile_duration_seconds",
    "Duration of one reconcile of one GenerationJob",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)
RECONCILES = Counter("draftgen_operator_reconciles", "Reconciles run", registry=REGISTRY)

_phases: dict[tuple[str, str], str] = {}
_lock = threading.Lock()
_server_started = False

for _phase in PHASES:
    JOBS.labels(phase=_phase).set(0)


def record_phase(namespace: str, name: str, phase: str | None) -> None:
    """Remember one job's phase (None when it is gone) and refresh the per-phase gauge."""
    with _lock:
        old = _phases.get((namespace, name))
        if old is not None and old != phase:
            JOB_PHASE.remove(namespace, name, old)
        if phase is None:
            _phases.pop((namespace, name), None)
        else:
            _phases[(namespace, name)] = phase
            JOB_PHASE.labels(namespace=namespace, generationjob=name, phase=phase).set(1)
        counts: dict[str, int] = {p: 0 for p in PHASES}
        for value in _phases.values():
            counts[value] = counts.get(value, 0) + 1
        for p, n in counts.items():
            JOBS.labels(phase=p).set(n)


def serve(port: int, address: str = "127.0.0.1") -> WSGIServer | None:
    """Serve `/metrics` on `address:port` (once per process; port 0 disables); the server, or
    None when it was not started now."""
    global _server_started
    with _lock:
        if _server_started or not port:
            return None
        server, _ = start_http_server(port, addr=address, registry=REGISTRY)
        _server_started = True
        return server
