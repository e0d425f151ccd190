"""`spec.generator`, `spec.inputs` and `spec.output`: the client that drives the server."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictFloat, StrictInt, field_validator, model_validator

from .base import SpecModel


class Concurrency(SpecModel):
    """How many requests the generator keeps in flight."""

    mode: Literal["auto", "fixed"] = "auto"
    """`auto` follows the server's KV capacity and live load (a short queue, never an idle
    server); `fixed` keeps exactly `maxRequests` in flight."""

    max_requests: StrictInt | None = Field(default=None, ge=1, le=100_000)
    """Requests in flight at most (per server replica). Required for `fixed`."""

    max_tokens_factor: StrictFloat = Field(default=1.5, gt=0.0, le=10.0)
    """In `auto` mode, predicted tokens in flight at most, as a multiple of the server's KV
    capacity (`max_total_num_tokens`); above 1 keeps a short queue."""

    @model_validator(mode="after")
    def _fixed_needs_a_number(self) -> Concurrency:
        if self.mode == "fixed" and self.max_requests is None:
            raise ValueError(
                "maxRequests: required when mode is fixed; give the number of requests to keep "
                "in flight, or use mode: auto"
            )
        return self


class GeneratorSpec(SpecModel):
    """The generator process: concurrency, retries, and what a met budget does."""

    image: str | None = None
    """draftgen image for the generator Job; defaults to the operator's own image."""

    concurrency: Concurrency = Field(default_factory=Concurrency)
    """Requests in flight."""

    request_timeout_seconds: StrictFloat = Field(default=3600.0, gt=0.0)
    """Longest wait for one generation (long reasoning completions take many minutes)."""

    retries: StrictInt = Field(default=5, ge=0, le=100)
    """Attempts after the first before a request is rejected with its reason."""

    on_budget_met: Literal["finish", "abort"] = "finish"
    """Requests still in flight when a budget is met: `finish` keeps them (a small overshoot),
    `abort` cancels them through `/abort_request` (nothing partial is written)."""

    metrics_port: StrictInt = Field(default=9400, ge=1, le=65535)
    """Port of the generator's Prometheus metrics."""

    tokenizer_workers: StrictInt = Field(default=2, ge=1, le=256)
    """Processes that render and tokenize prompts."""

    resources: dict[str, Any] = Field(default_factory=dict)
    """Kubernetes resource requirements for the generator container."""

    backoff_limit: StrictInt = Field(default=6, ge=0, le=1000)
    """Restarts of the generator Job before the GenerationJob fails (each resumes exactly)."""


class InputsSpec(SpecModel):
    """Where dataset sources live in the cluster."""

    claim_name: str | None = Field(default=None, min_length=1, max_length=253)
    """PersistentVolumeClaim holding the datasets, mounted read-only."""

    mount_path: str = Field(default="/data", pattern=r"^/")
    """Where it is mounted; relative dataset sources are resolved below it."""


class OutputSpec(SpecModel):
    """Where the generated records go."""

    claim_name: str | None = Field(default=None, min_length=1, max_length=253)
    """PersistentVolumeClaim for the output, mounted read-write (the only writable data volume)."""

    mount_path: str = Field(default="/output", pattern=r"^/")
    """Where the output claim is mounted."""

    path: str = Field(default=".", min_length=1)
    """Directory below `mountPath` in a cluster; run locally, relative to the job file's
    directory like every other path of the job (`generate --output` overrides it)."""

    shard_max_records: StrictInt = Field(default=10_000, ge=1, le=10_000_000)
    """Records per JSONL shard before a new shard starts."""

    @field_validator("path")
    @classmethod
    def _confined(cls, value: str) -> str:
        if value.startswith("/") or ".." in value.replace("\\", "/").split("/"):
            raise ValueError(
                f"{value!r}: must be a relative path without `..`, so output stays on the output "
                "volume; e.g. path: runs/kimi-k2.5"
            )
        return value
