"""What one `draftgen generate` run is given besides the job: where its servers are, where it
writes, how it shows progress (`Settings`), and where its samples come from (`SampleSource`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from draftgen.generator.prompts.samples import Reject, Sample
from draftgen.spec import DatasetSpec

SampleSource = Callable[[DatasetSpec, frozenset, "int | None"], Iterator["Sample | Reject"]]
"""(dataset, ids already done, longest prompt the servers accept) → samples and rejects."""


@dataclass
class Settings:
    """How one `draftgen generate` run talks to its servers and shows progress."""

    servers: list[str]
    """Base URLs of the SGLang servers (replicas of the same model)."""
    output: Path
    """Output directory (`DIR/<dataset>/shard-*.jsonl`)."""
    metrics_port: int | None = None
    """Serve Prometheus metrics here (None: do not serve)."""
    live_progress: bool | None = None
    """Live terminal display (None: when stderr is a terminal)."""
    log_format: str = "text"
    """Progress in the log without a live display: `text` or `json` (one object a line)."""
    health_timeout: float = 1800.0
    """Longest wait for a server's `/health_generate` (at start and after each failure)."""
    metrics_interval: float = 1.0
    """Seconds between reads of each server's `/metrics`."""
    manifest_interval: float = 5.0
    """Seconds between manifest rewrites."""
    backoff_base: float = 0.5
    """First retry delay in seconds (doubles each attempt, at most 30 s)."""
    transport: httpx.AsyncBaseTransport | None = None
    """Replaces the network in tests of the client's error handling."""
    allow_spec_change: bool = False
    """Resume a dataset whose fingerprint changed as a new shard series instead of refusing."""
    generationjob: str | None = None
    """The `generationjob` label of every metric series (None: the job's metadata.name)."""
    namespace: str | None = None
    """The `namespace` label of every metric series (None: the job's metadata.namespace)."""
    template_date: str | None = None
    """The date the prompts were rendered with, recorded in the job manifest (template_clock)."""
