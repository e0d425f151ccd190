"""One plan for one GenerationJob: every figure the planner knows, and what it still needs.

Pure apart from reading the model config (and a log, when given as text by the caller).
The stages are `capacity` (KV pool, headroom, what-if) and `workload` (decodes, ceiling, ETA);
host memory is checked here, per node. The operator calls `plan_status` for the key figures it
writes into status.
"""

from __future__ import annotations

import dataclasses

from draftgen.spec import GenerationJob, PlanStatus, ServerSpec
from draftgen.spec.hostmem import HostMemoryCheck, check_host_memory

from .capacity import check_tensor_parallel, plan_headroom, plan_kv_capacity
from .figures import Plan, PlanInputs
from .kvcache import MemoryInputError
from .layout_stage import plan_layouts
from .layouts import Layout
from .modelconfig import ModelConfigError
from .workload import plan_eta, plan_throughput

# Plan, PlanInputs and check_tensor_parallel are imported from here by the CLI, the validator
# and the tests.
__all__ = ["Plan", "PlanInputs", "build_plan", "check_tensor_parallel", "plan_status"]


def _host_memory(server: ServerSpec) -> HostMemoryCheck | None:
    """On each node only that node's ranks take their --hicache-size there."""
    hc = server.hierarchical_cache
    if not (hc.enabled and hc.size_gb_per_rank and server.host_memory_gb):
        return None
    return check_host_memory(
        hc.size_gb_per_rank,
        server.ranks_per_node,
        server.host_memory_gb,
        server.model_load_host_memory_gb,
        server.host_memory_margin_gb,
    )


def build_plan(job: GenerationJob, inputs: PlanInputs | None = None) -> Plan:
    """Every figure the planner can compute for `job`; `plan.missing` names the rest."""
    inputs = inputs or PlanInputs()
    server = job.spec.server
    plan = Plan(
        job_name=job.metadata.name,
        tensor_parallel_size=server.tensor_parallel_size,
        replicas=server.replicas,
        mem_fraction_static=inputs.mem_fraction_static or server.mem_fraction_static,
        kv_cache_dtype=inputs.kv_cache_dtype or server.kv_cache_dtype,
        max_running_requests=server.max_running_requests,
        nodes_per_replica=server.nodes_per_replica,
        schedule_conservativeness=job.spec.schedule_conservativeness,
        layout=Layout(server.attention_data_parallel_size, server.decode_context_parallel_size),
    )
    plan.warnings.extend(server.warnings())
    plan_kv_capacity(plan, job, inputs)  # 1. KV capacity
    plan_throughput(plan, job, inputs)  # 2. concurrency and the throughput ceiling
    plan.host_memory = _host_memory(server)  # 3. host memory, on each node
    plan_headroom(plan, job)  # 4. headroom, and what other fractions and dtypes would give
    plan_eta(plan, inputs)  # 5. ETA
    plan_layouts(plan, job, inputs)  # 6. every attention layout of the same GPUs
    return plan


def plan_status(job: GenerationJob, inputs: PlanInputs | None = None, **fields) -> PlanStatus:
    """The plan's key figures for `status.plan`; figures that cannot be computed stay unset.

    `fields` are `PlanInputs` fields, e.g. `observed_kv_capacity_tokens` (the server's
    `max_total_num_tokens`), `measured_throughput`, `done_completion_tokens` for a live ETA.
    Never raises for missing or broken inputs: the operator must keep reconciling."""
    if fields:
        inputs = dataclasses.replace(inputs or PlanInputs(), **fields)
    try:
        plan = build_plan(job, inputs)
    except (MemoryInputError, ModelConfigError, ValueError):
        return PlanStatus()
    return PlanStatus(
        kv_capacity_tokens=plan.capacity_tokens,
        concurrent_decodes=plan.decodes,
        throughput_ceiling_tokens_per_second=plan.ceiling_tokens_per_second,
        eta_seconds=plan.eta.total_seconds if plan.eta else None,
    )
