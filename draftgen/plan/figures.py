"""What goes into a plan (`PlanInputs`) and what comes out (`Plan`, its `WhatIf` rows): plain
data, filled stage by stage by `capacity` and `workload` and put together by `planner`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from draftgen.spec.hostmem import HostMemoryCheck

from .concurrency import DatasetLengths, ThroughputVerdict
from .eta import DatasetWork, Eta
from .headroom import Headroom
from .kvcache import KVCapacity, MemoryProfile, StartLog
from .layout_table import LayoutRow
from .layouts import Layout
from .modelconfig import ModelConfig


@dataclass
class PlanInputs:
    """What the command line (or the operator) adds to, or overrides in, the job."""

    base_dir: Path | None = None
    """Directory relative paths of the job are resolved from (the job file's)."""

    model_config: ModelConfig | None = None
    model_config_path: Path | None = None
    gpu_memory_gib: float | None = None
    free_before_load_gib: float | None = None
    free_after_load_gib: float | None = None
    start_log: StartLog | None = None
    decode_tokens_per_second: float | None = None
    mean_prompt_tokens: int | None = None
    mean_completion_tokens: int | None = None
    measured_throughput: float | None = None
    mem_fraction_static: float | None = None
    kv_cache_dtype: str | None = None
    observed_kv_capacity_tokens: int | None = None
    """The running server's `max_total_num_tokens`; replaces the prediction when known."""

    done_completion_tokens: dict[str, int] = field(default_factory=dict)
    """Completion tokens already written per dataset (for a live ETA)."""


@dataclass(frozen=True)
class WhatIf:
    mem_fraction_static: float
    tokens: int
    other_kv_cache_dtype: str
    other_dtype_tokens: int
    """Tokens with the other KV dtype (fp8_e4m3 for a 16-bit job, bf16 for an fp8 one)."""

    decodes: int | None
    headroom_gib: float
    thin: bool


@dataclass
class Plan:
    job_name: str
    tensor_parallel_size: int
    replicas: int
    mem_fraction_static: float
    kv_cache_dtype: str
    nodes_per_replica: int = 1
    """Nodes one model copy spans; the memory figures are per rank, host memory per node."""
    schedule_conservativeness: float = 1.0
    """`server.scheduleConservativeness`: how much KV SGLang keeps back for running requests."""
    model: ModelConfig | None = None
    memory: MemoryProfile | None = None
    capacity: KVCapacity | None = None
    capacity_tokens: int | None = None
    """The capacity the rest of the plan uses: observed when known, else predicted."""

    log_check: str | None = None
    what_if: list[WhatIf] = field(default_factory=list)
    min_mem_fraction_static: float | None = None
    lengths: list[DatasetLengths] = field(default_factory=list)
    mean_sequence_tokens: float | None = None
    decodes: int | None = None
    max_running_requests: int | None = None
    decode_tokens_per_second: float | None = None
    ceiling_tokens_per_second: float | None = None
    verdict: ThroughputVerdict | None = None
    host_memory: HostMemoryCheck | None = None
    headroom: Headroom | None = None
    work: list[DatasetWork] = field(default_factory=list)
    eta: Eta | None = None
    warnings: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    """Inputs that would complete the plan, each with the field or flag that gives it."""

    eta_guesses: list[str] = field(default_factory=list)
    """The estimated (not measured) inputs the ETA rests on, each with what would measure it."""

    layout: Layout = field(default_factory=Layout)
    """The server's attention layout (`attentionDataParallelSize`, `decodeContextParallelSize`)."""
    rank_pool_tokens: int | None = None
    """One rank's pool in request tokens: the longest request the server can hold."""
    measured_memory: MemoryProfile | None = None
    """Free memory at the layout it was measured (or estimated) at, before re-sharding."""
    measured_attention_dp: int = 1
    attention_weights_formula: str | None = None
    layouts: list[LayoutRow] = field(default_factory=list)
    """The what-if table over every layout of the server's GPUs."""
    layout_notes: list[str] = field(default_factory=list)
    """Why the layout table is missing or what its figures rest on."""
