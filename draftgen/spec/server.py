"""`spec.server`: the SGLang server, and the memory rules that keep it alive."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StrictBool, StrictFloat, StrictInt, model_validator

from draftgen.contract.sglang_flags import SGLangFlag, refusal, value_in

from .base import SpecModel
from .hostmem import check_host_memory

KVCacheDtype = Literal["auto", "bf16", "fp8_e4m3", "fp8_e5m2"]
LOSSY_KV_DTYPES = frozenset({"fp8_e4m3", "fp8_e5m2"})

# Thin prefill headroom above this crashed a real server (field facts, lesson 5).
MEM_FRACTION_WARN_ABOVE = 0.90

_QUANTITY = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|K|M|G|T)?$"


def _allowed_extra_arg(arg: str) -> str:
    """Refuse an argument SGLang's argparse would take for a flag the spec owns: an alias, an
    abbreviation (SGLang accepts any unambiguous prefix) or `--flag=value` all count. Checked per
    element, so the error names `spec.server.extraArgs[i]`."""
    problem = refusal(arg)
    if problem is not None:
        raise ValueError(problem)
    return arg


ExtraArg = Annotated[str, AfterValidator(_allowed_extra_arg)]


class HierarchicalCache(SpecModel):
    """SGLang's host-memory KV cache. It helps prefix reuse only; it adds no decode slots."""

    enabled: StrictBool = False
    """Pass `--enable-hierarchical-cache`."""

    size_gb_per_rank: StrictInt | None = Field(default=None, ge=1)
    """Host memory in GB **per tensor-parallel rank** (`--hicache-size`); each node must hold
    this times its ranks (`tensorParallelSize / nodesPerReplica`)."""


MAX_NODES_PER_REPLICA = 16


SCHEDULE_CONSERVATIVENESS_AUTO = 0.1
"""`server.scheduleConservativeness` when unset and the concurrency is `auto`."""
SCHEDULE_CONSERVATIVENESS_FIXED = 0.5
"""… and when it is `fixed`."""


class ServerSpec(SpecModel):
    """The SGLang server the operator runs: tensor parallel inside a pod (or over the pods of a
    LeaderWorkerSet group, one per node, when `nodesPerReplica` > 1), replicas side by side."""

    image: str = "lmsysorg/sglang:v0.5.23"
    """SGLang container image."""

    tensor_parallel_size: StrictInt = Field(default=8, ge=1, le=128)
    """GPUs one model copy is sharded over (`--tp-size`), over all its nodes: with
    `nodesPerReplica` > 1 it must be `nodesPerReplica × gpusPerNode`."""

    attention_data_parallel_size: StrictInt = Field(default=1, ge=1, le=128)
    """Data-parallel attention (`--attn-dp-size`, SGLang's older `--enable-dp-attention
    --dp-size`): the `tensorParallelSize` GPUs form this many attention groups of
    `tensorParallelSize / attentionDataParallelSize` GPUs, each with its own scheduler and KV
    pool holding only its own requests, while the experts stay sharded over all of them. For an
    MLA model (DeepSeek-V3, Kimi-K2.5), whose latent KV every GPU of an attention group holds
    whole, this multiplies the server's KV tokens (each GPU then holds more of the attention
    weights: `draftgen plan` prints the table). Must divide `tensorParallelSize`; a request must
    fit one group's pool. 1: off."""

    decode_context_parallel_size: StrictInt = Field(default=1, ge=1, le=128)
    """Decode context parallelism (`--dcp-size`): each request's KV pages are striped over this
    many GPUs of its attention group instead of copied to each, so an MLA model holds this many
    times the tokens with no extra weights, paid for in communication every decode step. Must
    divide `tensorParallelSize / attentionDataParallelSize`. 1: off."""

    gpus_per_replica: StrictInt | None = Field(default=None, ge=1, le=64)
    """GPUs requested per server pod (`nvidia.com/gpu`) of a one-node replica; defaults to
    `tensorParallelSize`. A multi-node replica uses `gpusPerNode` instead."""

    nodes_per_replica: StrictInt = Field(default=1, ge=1, le=MAX_NODES_PER_REPLICA)
    """Nodes one model copy spans. 1: a Deployment per replica. More: a LeaderWorkerSet per
    replica (the LeaderWorkerSet controller must be installed), one pod per node, SGLang's
    `--nnodes`/`--node-rank`/`--dist-init-addr` set by the operator."""

    gpus_per_node: StrictInt | None = Field(default=None, ge=1, le=16)
    """GPUs of each pod of a multi-node replica (one pod per node); defaults to
    `tensorParallelSize / nodesPerReplica`. Only with `nodesPerReplica` > 1."""

    host_network: StrictBool = False
    """Multi-node only: run the group's pods in the node's network namespace (`hostNetwork`),
    for NCCL over interfaces the pod network does not offer. The server port and SGLang's
    rank ports are then taken on the node itself."""

    rdma: StrictBool = False
    """Multi-node only: let NCCL use RDMA (InfiniBand/RoCE) by granting the server container
    `IPC_LOCK` (pinning memory). Request the RDMA device itself in `resources.limits` (e.g.
    `rdma/ib: 1`, the name your RDMA device plugin gives it)."""

    replicas: StrictInt = Field(default=1, ge=1, le=64)
    """Independent data-parallel copies of the server; the generator balances over them (at
    least 1: with none, every request would wait for a server that never comes; use `suspend`
    to pause a job)."""

    mem_fraction_static: StrictFloat = Field(default=0.85, gt=0.0, lt=1.0)
    """Fraction of GPU memory for weights and KV pool (`--mem-fraction-static`). Above 0.90 the
    remainder may not hold prefill activations: a burst can crash the server out of memory."""

    kv_cache_dtype: KVCacheDtype = "auto"
    """KV cache element type (`--kv-cache-dtype`). fp8 roughly doubles capacity but is lossy."""

    allow_lossy_kv_cache: StrictBool = False
    """Must be true for an fp8 `kvCacheDtype`: lossy KV visibly degraded an INT4 MLA model."""

    hierarchical_cache: HierarchicalCache = Field(default_factory=HierarchicalCache)
    """Host-memory KV cache settings."""

    max_running_requests: StrictInt | None = Field(default=None, ge=1)
    """Upper bound on concurrently decoding requests (`--max-running-requests`)."""

    schedule_conservativeness: StrictFloat | None = Field(default=None, gt=0.0, le=2.0)
    """How much KV SGLang keeps back for the tokens its running requests may still generate
    (`--schedule-conservativeness`, SGLang's own default 1.0): it admits a queued request only
    if the request's prompt and whole `maxNewTokens` fit beside `0.7 × this` (decaying to a
    seventh of that while nothing is retracted) × every running request's remaining tokens, so
    with 1.0 and requests that stop well before `maxNewTokens` the pool stays part-empty while
    requests queue. Lower fills it further (SGLang's tuning advice for low token usage with a
    queue) at the risk of retractions (requests evicted and recomputed) when the running ones
    outgrow the estimate; above 1 is SGLang's advice against frequent retractions.
    Unset: 0.1 with `auto` concurrency, where draftgen itself sends a request only while the KV
    its requests are expected to hold (from the lengths each dataset produced) fits the pool,
    so the server need keep back little; 0.5 with `fixed`, where the server's reservation is
    the only guard. Both measured on the simulated seed server (docs/benchmarks.md
    "Saturation")."""

    chunked_prefill_size: StrictInt | None = Field(default=None, ge=1)
    """Prefill chunk in tokens (`--chunked-prefill-size`)."""

    context_length: StrictInt | None = Field(default=None, ge=1)
    """Longest prompt plus completion in tokens (`--context-length`)."""

    extra_args: list[ExtraArg] = Field(default_factory=list)
    """Further `sglang.launch_server` arguments, passed through verbatim. A flag a field of the
    spec sets (in any spelling SGLang accepts: alias, prefix, `--flag=value`) is refused."""

    resources: dict[str, Any] = Field(default_factory=dict)
    """Kubernetes resource requirements for the server container (GPU limits are added)."""

    node_selector: dict[str, str] = Field(default_factory=dict)
    """Node labels the server pods must match."""

    tolerations: list[dict[str, Any]] = Field(default_factory=list)
    """Kubernetes tolerations for the server pods (e.g. for tainted GPU nodes)."""

    shm_size: str = Field(default="64Gi", pattern=_QUANTITY)
    """Size of `/dev/shm` (a memory-backed emptyDir) for NCCL between ranks."""

    host_memory_gb: StrictInt | None = Field(default=None, ge=1)
    """The node's host memory in GB; required to check a hierarchical cache against."""

    model_load_host_memory_gb: StrictInt = Field(default=40, ge=0)
    """Host memory in GB that loading the model takes (about 40 for Kimi-K2.5)."""

    host_memory_margin_gb: StrictInt = Field(default=16, ge=0)
    """Host memory in GB kept free for the OS, the kubelet and page cache."""

    port: StrictInt = Field(default=30000, ge=1, le=65535)
    """HTTP port of the server (`/generate`, `/metrics`)."""

    @property
    def multi_node(self) -> bool:
        """One model copy over several nodes (a LeaderWorkerSet per replica)."""
        return self.nodes_per_replica > 1

    @property
    def ranks_per_node(self) -> int:
        """Tensor-parallel ranks (GPUs in use) on each node of a replica."""
        return max(self.tensor_parallel_size // self.nodes_per_replica, 1)

    @property
    def gpus(self) -> int:
        """GPUs per server pod (per node of a multi-node replica)."""
        if self.multi_node:
            return self.gpus_per_node or self.ranks_per_node
        return self.gpus_per_replica or self.tensor_parallel_size

    @property
    def kv_cache_is_lossy(self) -> bool:
        return self.kv_cache_dtype in LOSSY_KV_DTYPES

    @property
    def hicache_total_gb(self) -> int:
        """Host memory the hierarchical cache asks for on one node, over the ranks on it."""
        if not self.hierarchical_cache.enabled or not self.hierarchical_cache.size_gb_per_rank:
            return 0
        return self.hierarchical_cache.size_gb_per_rank * self.ranks_per_node

    def _multi_node_problem(self) -> str | None:
        """Why the nodes/GPUs/TP arithmetic of the spec does not hold, with the fix."""
        nodes, tp = self.nodes_per_replica, self.tensor_parallel_size
        if not self.multi_node:
            for field, value in (
                ("gpusPerNode", self.gpus_per_node is not None),
                ("hostNetwork", self.host_network),
                ("rdma", self.rdma),
            ):
                if value:
                    return (
                        f"{field}: only for a multi-node replica (nodesPerReplica > 1); a "
                        "one-node replica's GPUs are gpusPerReplica; remove it or set "
                        "nodesPerReplica"
                    )
            return None
        if self.gpus_per_replica is not None:
            return (
                f"gpusPerReplica: not used with nodesPerReplica {nodes} (each node's pod gets "
                "gpusPerNode GPUs); remove gpusPerReplica and set gpusPerNode"
            )
        if value_in(self.extra_args, SGLangFlag.PP_SIZE) not in (None, "1"):
            return (
                f"extraArgs: {SGLangFlag.PP_SIZE} across nodes is not supported: draftgen shards "
                "one model copy by tensor parallelism over nodesPerReplica × gpusPerNode GPUs; "
                f"remove {SGLangFlag.PP_SIZE}"
            )
        if self.gpus_per_node is None:
            if tp % nodes:
                return (
                    f"tensorParallelSize: {tp} cannot be spread evenly over nodesPerReplica "
                    f"{nodes} (each node must hold the same number of ranks); set "
                    "tensorParallelSize to nodesPerReplica × GPUs per node (e.g. "
                    f"{nodes * 8} for {nodes} × 8 GPUs) or set gpusPerNode"
                )
            return None
        if tp != nodes * self.gpus_per_node:
            return (
                f"tensorParallelSize: {tp} but nodesPerReplica {nodes} × gpusPerNode "
                f"{self.gpus_per_node} = {nodes * self.gpus_per_node} GPUs; SGLang's --tp-size "
                "is the total over all nodes: set tensorParallelSize to "
                f"{nodes * self.gpus_per_node} (or change gpusPerNode)"
            )
        return None

    @property
    def attention_tp_size(self) -> int:
        """GPUs of one attention group (SGLang's `attn_tp_size`, runtime_context.
        derive_attn_tp_size: `tp_size // attn_dp_size`)."""
        return max(self.tensor_parallel_size // self.attention_data_parallel_size, 1)

    def _layout_problem(self) -> str | None:
        """Why the attention layout cannot start, with the fix (SGLang 0.5.23's rules:
        arg_groups/parallel_hook.handle_data_parallelism asserts `tp % attn_dp == 0` and refuses
        `--dp-size` beside `--attn-dp-size`; distributed/parallel_state carves each DCP group out
        of consecutive ranks, so it must fit an attention group)."""
        tp, d, dcp = (
            self.tensor_parallel_size,
            self.attention_data_parallel_size,
            self.decode_context_parallel_size,
        )
        divisors = [n for n in range(1, tp + 1) if tp % n == 0]
        if tp % d:
            return (
                f"attentionDataParallelSize: {d} does not divide tensorParallelSize {tp} (each "
                f"attention group gets tensorParallelSize / attentionDataParallelSize GPUs); "
                f"use one of {divisors}"
            )
        attn_tp = tp // d
        if attn_tp % dcp:
            fits = [n for n in range(1, attn_tp + 1) if attn_tp % n == 0]
            return (
                f"decodeContextParallelSize: {dcp} does not divide the {attn_tp} GPUs of an "
                f"attention group (tensorParallelSize {tp} / attentionDataParallelSize {d}); "
                f"use one of {fits}"
            )
        dp = value_in(self.extra_args, SGLangFlag.DP_SIZE)
        if d > 1 and dp not in (None, "1"):
            return (
                f"extraArgs: {SGLangFlag.DP_SIZE} {dp} beside attentionDataParallelSize {d}: "
                "SGLang 0.5.23 does not combine data-parallel replicas with attention data "
                f"parallelism; remove {SGLangFlag.DP_SIZE} (use server.replicas for more "
                "copies of the server)"
            )
        return None

    @model_validator(mode="after")
    def _cross_field_rules(self) -> ServerSpec:
        layout = self._layout_problem()
        if layout is not None:
            raise ValueError(layout)
        if self.kv_cache_is_lossy and not self.allow_lossy_kv_cache:
            raise ValueError(
                f"kvCacheDtype: {self.kv_cache_dtype} is a lossy KV cache (it visibly degrades an "
                "INT4 MLA model such as Kimi-K2.5); use bf16/auto, or set "
                "server.allowLossyKVCache: true to accept the quality loss"
            )
        problem = self._multi_node_problem()
        if problem is not None:
            raise ValueError(problem)
        if not self.multi_node and self.gpus < self.tensor_parallel_size:
            raise ValueError(
                f"gpusPerReplica: {self.gpus} GPUs cannot hold tensorParallelSize "
                f"{self.tensor_parallel_size}; set gpusPerReplica >= tensorParallelSize or lower "
                "tensorParallelSize"
            )
        hc = self.hierarchical_cache
        if hc.enabled:
            if hc.size_gb_per_rank is None:
                raise ValueError(
                    "hierarchicalCache.sizeGBPerRank: required when hierarchicalCache.enabled is "
                    "true; give the host memory in GB per tensor-parallel rank (e.g. 48)"
                )
            if self.host_memory_gb is None:
                raise ValueError(
                    "hostMemoryGB: required when hierarchicalCache.enabled is true, to check "
                    f"{hc.size_gb_per_rank} GB per rank × {self.ranks_per_node} ranks per node "
                    "against the node; set server.hostMemoryGB to the node's memory"
                )
            check = check_host_memory(
                hc.size_gb_per_rank,
                self.ranks_per_node,
                self.host_memory_gb,
                self.model_load_host_memory_gb,
                self.host_memory_margin_gb,
            )
            if check.problem:
                raise ValueError(check.problem)
        elif hc.size_gb_per_rank is not None:
            raise ValueError(
                "hierarchicalCache.sizeGBPerRank: set but hierarchicalCache.enabled is false; "
                "enable it or remove the size"
            )
        return self

    def warnings(self) -> list[str]:
        """Legal but risky settings, for the CLI and the operator's status."""
        out = []
        if self.mem_fraction_static > MEM_FRACTION_WARN_ABOVE:
            out.append(
                f"server.memFractionStatic: {self.mem_fraction_static} is above "
                f"{MEM_FRACTION_WARN_ABOVE}: thin headroom; prefill activations and CUDA graphs may not fit "
                "(0.93 left 0.82 GB per GPU and crashed under a burst); prefer 0.85–0.88"
            )
        if self.kv_cache_is_lossy:
            out.append(
                f"server.kvCacheDtype: {self.kv_cache_dtype} is lossy and was allowed explicitly; "
                "generated data will not match the bf16 model exactly"
            )
        return out
