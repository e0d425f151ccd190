"""`status`: what the operator observed, written only by draftgen."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from .base import StatusModel
from .exports import ExportStatus

Phase = Literal[
    "Pending",
    "Queued",
    "DownloadingModel",
    "Preflight",
    "StartingServer",
    "Generating",
    "Suspended",
    "Succeeded",
    "Failed",
]
PHASES: tuple[Phase, ...] = get_args(Phase)
"""Every phase, in lifecycle order (the one list: operator/phases.py derives its groups)."""


class Condition(StatusModel):
    """A Kubernetes-style condition."""

    type: str
    """Kind of condition: SpecValid, ServerReady, Generating, Complete, Failed."""

    status: Literal["True", "False", "Unknown"]
    """Whether the condition holds."""

    reason: str = ""
    """One CamelCase word a program can match."""

    message: str = ""
    """What happened and what to do, for a person."""

    last_transition_time: str | None = None
    """When `status` last changed (RFC 3339)."""

    observed_generation: int | None = None
    """The spec generation this condition was computed from."""


class DatasetProgress(StatusModel):
    """One dataset's progress as the generator reported it."""

    name: str
    """Dataset name."""

    samples: int = 0
    """Samples written."""

    prompt_tokens: int = 0
    """Prompt tokens of the written samples."""

    completion_tokens: int = 0
    """Completion tokens of the written samples."""

    budget_completion_tokens: int | None = None
    """The completion-token budget, if any."""

    done: bool = False
    """The dataset reached a budget or ran out of rows."""

    overshoot_percent: float | None = None
    """Completion tokens beyond the budget, in percent of it."""

    rejects: int = 0
    """Rows or requests rejected with a reason."""


class ServerStatus(StatusModel):
    """What the SGLang server reported about itself."""

    ready_replicas: int = 0
    """Replicas passing readiness."""

    max_total_num_tokens: int | None = None
    """KV capacity in tokens: every data-parallel rank's pool together (SGLang's top-level
    `max_total_num_tokens` is rank 0's only), or the server's one pool."""

    kv_tokens_per_rank: list[int] | None = None
    """Each data-parallel rank's own KV pool in tokens, when the server has several (DP
    attention): a request lives wholly in one, so the longest request must fit one of these."""

    restarts: int = 0
    """Container restarts of the server pods."""


class PlanStatus(StatusModel):
    """Key figures of the capacity plan, computed before the run."""

    kv_capacity_tokens: int | None = None
    """Predicted KV pool capacity in tokens."""

    concurrent_decodes: int | None = None
    """Decodes that fit at the datasets' mean sequence length."""

    throughput_ceiling_tokens_per_second: float | None = None
    """Completion tokens per second the KV bound allows."""

    eta_seconds: float | None = None
    """Predicted time for all budgets."""


class ModelDownloadStatus(StatusModel):
    """The model download Job's view of `hf://` weights being copied onto the models volume."""

    repo: str
    """Hub repository, `ORG/NAME`."""

    revision: str | None = None
    """`spec.model.revision` as written (None: the default branch)."""

    commit: str | None = None
    """The commit the revision resolved to, once the download ended."""

    path: str = ""
    """Where the weights are on the volume (the server's `--model-path`)."""

    bytes_done: int | None = None
    """Bytes of the revision's files on the volume so far."""

    bytes_total: int | None = None
    """Bytes of every file of the revision."""

    progress: str = ""
    """For a person and the printer column, e.g. `41% of 595.0GB`, or `done`."""


class PromptLengths(StatusModel):
    """Prompt lengths in tokens over the rows the preflight read."""

    p50: int
    p90: int
    p99: int
    max: int


class DatasetPreflight(StatusModel):
    """What the preflight found in one dataset's first rows."""

    name: str
    """Dataset name."""

    passed: bool = True
    """The source opened and its first rows became samples."""

    rows_read: int = 0
    """Rows read through the dataset's parser and the chat template."""

    samples: int = 0
    """Samples those rows gave."""

    rejects: dict[str, int] = Field(default_factory=dict)
    """Rejected rows by reason (`malformed_json`, `missing_field`, ...)."""

    prompt_tokens: PromptLengths | None = None
    """Prompt-length percentiles of the samples."""

    problem: str = ""
    """Why the dataset fails, with the fix."""

    warning: str = ""
    """Legal but suspicious (a rejected first row where bad rows do not fail the run)."""


class PreflightStatus(StatusModel):
    """The inputs and the tokenizer as checked before any server is created (`draftgen
    preflight`, the same checks as `draftgen validate --inputs`)."""

    passed: bool
    """Every dataset and the tokenizer check passed."""

    tokenizer: str = ""
    """The tokenizer check: what loaded (special tokens and generation prefix checked), or why
    it failed with the fix."""

    tokenizer_passed: bool = True
    """The tokenizer loaded and its special tokens and generation prefix are right."""

    datasets: list[DatasetPreflight] = Field(default_factory=list)
    """Per-dataset report."""


class GenerationJobStatus(StatusModel):
    """Observed state of a GenerationJob."""

    phase: Phase = "Pending"
    """Pending, DownloadingModel, Preflight, StartingServer, Generating, Suspended, Succeeded or
    Failed."""

    conditions: list[Condition] = Field(default_factory=list)
    """Conditions with reasons and messages."""

    observed_generation: int | None = None
    """The spec generation the status reflects."""

    message: str = ""
    """Short summary for a person."""

    progress: str = ""
    """Completion tokens against the total budget, e.g. `41%`."""

    datasets: list[DatasetProgress] = Field(default_factory=list)
    """Per-dataset progress."""

    completion_tokens: int = 0
    """Completion tokens over all datasets."""

    throughput_tokens_per_second: float | None = None
    """Recent completion tokens per second."""

    eta_seconds: float | None = None
    """Estimated seconds until every budget is met."""

    eta: str = ""
    """The same estimate for a person, e.g. `17h20m`."""

    server: ServerStatus = Field(default_factory=ServerStatus)
    """The server's view."""

    plan: PlanStatus | None = None
    """The capacity plan's key figures."""

    model: ModelDownloadStatus | None = None
    """The model download (`hf://` weights in a cluster)."""

    preflight: PreflightStatus | None = None
    """The inputs check that ran before the server was created."""

    warnings: list[str] = Field(default_factory=list)
    """Legal but risky settings."""

    start_time: str | None = None
    """When generation started (RFC 3339)."""

    completion_time: str | None = None
    """When the job succeeded or failed (RFC 3339)."""

    exports: list[ExportStatus] = Field(default_factory=list)
    """The exports of `spec.exports` the generator Job wrote, once it succeeded."""
