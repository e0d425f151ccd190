"""One plan for one GenerationJob: every figure the planner knows, and what it still needs.

Pure apart from reading the model config (and a log, when given as text by the caller).
The operator calls `plan_status` for the key figures it writes into status.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from draftgen.contract.sglang_flags import SGLangFlag, value_in
from draftgen.spec import GenerationJob, PlanStatus
from draftgen.spec.hostmem import HostMemoryCheck, check_host_memory

from . import concurrency, kvcache
from . import eta as eta_mod
from . import headroom as headroom_mod
from .concurrency import DatasetLengths, ThroughputVerdict
from .eta import DatasetWork, Eta
from .headroom import Headroom
from .kvcache import KVCapacity, MemoryInputError, MemoryProfile, StartLog
from .modelconfig import ModelConfig, ModelConfigError, config_location, load_model_config

WHAT_IF_FRACTIONS = (0.80, 0.85, 0.88, 0.90, 0.93)
LOSSY_ALTERNATIVE = "fp8_e4m3"


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


def check_tensor_parallel(model: ModelConfig, tp: int) -> None:
    """SGLang shards attention heads over the ranks: a `tp` that does not divide them cannot
    start. Raises `ModelConfigError` naming the field and the sizes that work."""
    heads = model.num_heads
    if heads is None or heads % tp == 0:
        return
    divisors = [d for d in range(1, min(heads, 64) + 1) if heads % d == 0]
    raise ModelConfigError(
        f"spec.server.tensorParallelSize: {tp} does not divide the model's {heads} attention "
        f"heads ({model.source}): SGLang cannot shard it; use one of {divisors}"
    )


def _extra_arg(args: list[str], flag: SGLangFlag) -> int | None:
    value = value_in(args, flag)
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


def _model(job: GenerationJob, inputs: PlanInputs, plan: Plan) -> ModelConfig | None:
    if inputs.model_config is not None:
        return inputs.model_config
    path = inputs.model_config_path or config_location(
        job.spec.model.config_path, job.spec.model.weights, inputs.base_dir
    )
    if path is None:
        plan.missing.append(
            "the model's config.json: set spec.model.configPath or pass "
            "--model-config (hub weights are not read)"
        )
        return None
    try:
        return load_model_config(path)
    except ModelConfigError as err:
        plan.missing.append(str(err))
        return None


def _memory(
    job: GenerationJob, inputs: PlanInputs, model: ModelConfig | None, plan: Plan
) -> MemoryProfile | None:
    planning = job.spec.planning
    tp = job.spec.server.tensor_parallel_size
    log = inputs.start_log
    if log is not None:
        return kvcache.resharded(log.profile(), log.tp_size or tp, tp)
    if inputs.free_before_load_gib is not None or inputs.free_after_load_gib is not None:
        if inputs.free_before_load_gib is None or inputs.free_after_load_gib is None:
            raise MemoryInputError("give both --free-before-load-gib and --free-after-load-gib")
        return kvcache.measured(
            inputs.free_before_load_gib,
            inputs.free_after_load_gib,
            detail="measured at one start (command line)",
        )
    if planning.measured is not None:
        m = planning.measured
        profile = kvcache.measured(
            m.free_before_load_gib,
            m.free_after_load_gib,
            m.cuda_graph_gib,
            detail=f"measured at one start: {m.free_before_load_gib:.2f} GiB "
            f"free before loading, {m.free_after_load_gib:.2f} GiB after "
            "(spec.planning.measured)",
        )
        return kvcache.resharded(profile, m.tensor_parallel_size or tp, tp)
    gpu = inputs.gpu_memory_gib or planning.gpu_memory_gib
    weights = (model.weights_bytes if model else None) or (
        int(planning.weights_gb * 1e9) if planning.weights_gb else None
    )
    if gpu is None or weights is None:
        need = []
        if gpu is None:
            need.append("spec.planning.gpuMemoryGiB or --gpu-memory-gib")
        if weights is None:
            need.append("a readable model.safetensors.index.json or spec.planning.weightsGB")
        plan.missing.append(
            "free GPU memory: measure one start (spec.planning.measured, "
            "--free-before-load-gib/--free-after-load-gib or --from-log) or give "
            + " and ".join(need)
        )
        return None
    return kvcache.estimated(
        gpu, weights, tp, planning.cuda_context_gib, planning.load_overhead_gib
    )


def _lengths(job: GenerationJob, inputs: PlanInputs) -> list[DatasetLengths]:
    planning = job.spec.planning
    out = []
    for ds in job.spec.datasets:
        exp = ds.expected
        candidates = [
            ("command line", inputs.mean_prompt_tokens, inputs.mean_completion_tokens),
            ("dataset", exp.prompt_tokens if exp else None, exp.completion_tokens if exp else None),
            ("job", planning.mean_prompt_tokens, planning.mean_completion_tokens),
        ]
        prompt = next((p for _, p, _ in candidates if p is not None), None)
        completion = next((c for _, _, c in candidates if c is not None), None)
        source = next((s for s, p, c in candidates if p is not None or c is not None), "unknown")
        out.append(DatasetLengths(ds.name, prompt, completion, source))  # type: ignore[arg-type]
    return out


def build_plan(job: GenerationJob, inputs: PlanInputs | None = None) -> Plan:
    """Every figure the planner can compute for `job`; `plan.missing` names the rest."""
    inputs = inputs or PlanInputs()
    server = job.spec.server
    planning = job.spec.planning
    tp = server.tensor_parallel_size
    plan = Plan(
        job_name=job.metadata.name,
        tensor_parallel_size=tp,
        replicas=server.replicas,
        mem_fraction_static=inputs.mem_fraction_static or server.mem_fraction_static,
        kv_cache_dtype=inputs.kv_cache_dtype or server.kv_cache_dtype,
        max_running_requests=server.max_running_requests,
        nodes_per_replica=server.nodes_per_replica,
        schedule_conservativeness=server.schedule_conservativeness,
    )
    plan.warnings.extend(server.warnings())

    # 1. KV capacity
    plan.model = _model(job, inputs, plan)
    if plan.model is not None:
        check_tensor_parallel(plan.model, tp)
    plan.memory = _memory(job, inputs, plan.model, plan)
    max_total_tokens = _extra_arg(server.extra_args, SGLangFlag.MAX_TOTAL_TOKENS)
    page_size = _extra_arg(server.extra_args, SGLangFlag.PAGE_SIZE) or 1
    if plan.model and plan.memory:
        cell = plan.model.cell_bytes(plan.kv_cache_dtype, tp)
        plan.capacity = kvcache.kv_capacity(
            plan.memory,
            plan.mem_fraction_static,
            cell,
            plan.kv_cache_dtype,
            max_total_tokens,
            page_size,
        )
        plan.min_mem_fraction_static = plan.memory.min_mem_fraction_static
        if not plan.capacity.fits:
            plan.warnings.append(
                f"memFractionStatic {plan.mem_fraction_static}: the weights leave no KV pool "
                f"(SGLang refuses to start); raise it above {plan.min_mem_fraction_static:.3f}"
            )
        plan.log_check = _log_check(inputs.start_log, plan.model, tp, page_size)
    log = inputs.start_log
    if log is not None and log.tp_size is not None and log.tp_size != tp:
        plan.warnings.append(
            f"the log is of a start with tp_size {log.tp_size}, the job has tensorParallelSize "
            f"{tp}: free memory per rank was re-derived for tp {tp} (an estimate); measure a "
            "start like the job's"
        )
    plan.capacity_tokens = inputs.observed_kv_capacity_tokens or (
        plan.capacity.tokens if plan.capacity else None
    )

    # 2. Concurrency and the throughput ceiling
    plan.lengths = _lengths(job, inputs)
    for ds, lengths in zip(job.spec.datasets, plan.lengths):
        done = inputs.done_completion_tokens.get(ds.name, 0)
        plan.work.append(
            eta_mod.dataset_work(
                ds.name,
                ds.budget.completion_tokens,
                ds.budget.total_tokens,
                ds.budget.max_samples,
                lengths,
                done,
            )
        )
    samples = {w.name: w.samples for w in plan.work if w.samples}
    plan.mean_sequence_tokens = concurrency.mean_sequence_tokens(plan.lengths, samples)
    if plan.mean_sequence_tokens is None:
        plan.missing.append(
            "mean prompt and completion lengths: spec.datasets[].expected, "
            "spec.planning.meanPromptTokens/meanCompletionTokens, or "
            "--mean-prompt-tokens/--mean-completion-tokens"
        )
    elif plan.capacity_tokens:
        plan.decodes = concurrency.concurrent_decodes(
            plan.capacity_tokens, plan.mean_sequence_tokens, server.max_running_requests
        )
    plan.decode_tokens_per_second = (
        inputs.decode_tokens_per_second or planning.decode_tokens_per_second
    )
    if plan.decodes is not None and plan.decode_tokens_per_second:
        plan.ceiling_tokens_per_second = concurrency.throughput_ceiling(
            plan.decodes, plan.decode_tokens_per_second
        ) * max(server.replicas, 1)
        if inputs.measured_throughput:
            plan.verdict = concurrency.explain_throughput(
                inputs.measured_throughput,
                plan.ceiling_tokens_per_second,
                plan.decodes * max(server.replicas, 1),
                plan.decode_tokens_per_second,
            )
    elif plan.decodes is not None:
        plan.missing.append(
            "per-request decode speed for the throughput ceiling: "
            "spec.planning.decodeTokensPerSecond or --decode-tokens-per-second"
        )

    # 3. Host memory, on each node: only that node's ranks take their --hicache-size there
    hc = server.hierarchical_cache
    if hc.enabled and hc.size_gb_per_rank and server.host_memory_gb:
        plan.host_memory = check_host_memory(
            hc.size_gb_per_rank,
            server.ranks_per_node,
            server.host_memory_gb,
            server.model_load_host_memory_gb,
            server.host_memory_margin_gb,
        )

    # 4. Headroom, and what other fractions and dtypes would give
    if plan.memory and plan.capacity and plan.model:
        plan.headroom = headroom_mod.headroom(
            plan.memory, plan.capacity, planning.cuda_graph_gib, planning.min_headroom_gib
        )
        if plan.headroom.warning:
            plan.warnings.append(plan.headroom.warning)
        plan.what_if = _what_if(plan, job, max_total_tokens, page_size)

    # 5. ETA
    rate, basis = (
        (inputs.measured_throughput, "measured")
        if inputs.measured_throughput
        else (plan.ceiling_tokens_per_second, "ceiling")
    )
    if rate:
        plan.eta = eta_mod.eta(plan.work, rate, basis)
        plan.eta_guesses = _eta_guesses(plan, inputs)
    for w in plan.work:
        if w.completion_tokens is None:
            plan.missing.append(f"dataset {w.name}: {w.basis.removeprefix('unknown: ')}")
    return plan


_LENGTHS_FROM = {
    "job": "spec.planning.meanPromptTokens/meanCompletionTokens (one guess for every dataset)",
    "command line": "--mean-prompt-tokens/--mean-completion-tokens (one guess for every dataset)",
    "dataset": "its spec.datasets[].expected (an estimate)",
}


def _eta_guesses(plan: Plan, inputs: PlanInputs) -> list[str]:
    """Which inputs of the ETA were guessed rather than measured, and where each came from."""
    assert plan.eta is not None
    out = []
    ceiling = plan.eta.basis == "ceiling"
    if ceiling:
        out.append(
            f"throughput: the ceiling at {plan.decode_tokens_per_second:g} tok/s per decode "
            "(spec.planning.decodeTokensPerSecond or --decode-tokens-per-second), not a measured "
            "rate; pass --measured-throughput once the server runs"
        )
        memory = plan.memory
        if inputs.observed_kv_capacity_tokens is None and memory and memory.source == "estimated":
            out.append(
                "KV capacity: estimated from the GPU memory and the weights' size; measure "
                "one start (spec.planning.measured or --from-log)"
            )
    guessed: dict[tuple[str, int | None, int | None], list[str]] = {}
    for lengths, work in zip(plan.lengths, plan.work):
        # Lengths set the decodes (ceiling) and turn sample or total budgets into tokens.
        if work.completion_tokens is None:
            continue
        if (ceiling or not work.basis.startswith("completionTokens")) and (
            lengths.source in _LENGTHS_FROM
        ):
            key = (lengths.source, lengths.prompt_tokens, lengths.completion_tokens)
            guessed.setdefault(key, []).append(lengths.name)
    for (source, prompt, completion), names in guessed.items():
        which = f"dataset {names[0]}" if len(names) == 1 else f"datasets {', '.join(names)}"
        out.append(
            f"{which}: mean prompt {_num(prompt)} / completion {_num(completion)} tokens from "
            f"{_LENGTHS_FROM[source]}"
        )
    return out


def _num(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _what_if(
    plan: Plan, job: GenerationJob, max_total_tokens: int | None, page_size: int
) -> list[WhatIf]:
    assert plan.memory and plan.model
    tp = plan.tensor_parallel_size
    lossy = LOSSY_ALTERNATIVE if plan.kv_cache_dtype not in ("fp8_e4m3", "fp8_e5m2") else "bf16"
    cell = plan.model.cell_bytes(plan.kv_cache_dtype, tp)
    other_cell = plan.model.cell_bytes(lossy, tp)
    rows = []
    for mf in sorted(set(WHAT_IF_FRACTIONS) | {plan.mem_fraction_static}):
        cap = kvcache.kv_capacity(
            plan.memory, mf, cell, plan.kv_cache_dtype, max_total_tokens, page_size
        )
        other = kvcache.kv_capacity(plan.memory, mf, other_cell, lossy, max_total_tokens, page_size)
        room = headroom_mod.headroom(
            plan.memory, cap, job.spec.planning.cuda_graph_gib, job.spec.planning.min_headroom_gib
        )
        decodes = (
            concurrency.concurrent_decodes(
                cap.tokens, plan.mean_sequence_tokens, plan.max_running_requests
            )
            if plan.mean_sequence_tokens
            else None
        )
        rows.append(
            WhatIf(mf, cap.tokens, lossy, other.tokens, decodes, room.after_graphs_gib, room.thin)
        )
    return rows


def _log_check(log: StartLog | None, model: ModelConfig, tp: int, page_size: int) -> str | None:
    """Does the rule reproduce the start the log came from?"""
    if log is None or log.max_total_num_tokens is None or log.mem_fraction_static is None:
        return None
    dtype = log.kv_cache_dtype or "auto"
    cap = kvcache.kv_capacity(
        log.profile(),
        log.mem_fraction_static,
        model.cell_bytes(dtype, log.tp_size or tp),
        dtype,
        log.max_total_tokens,
        page_size,
    )
    err = kvcache.relative_error(cap.tokens, log.max_total_num_tokens)
    capped = (
        f" (capped by --max-total-tokens {log.max_total_tokens:,}; uncapped "
        f"{cap.uncapped_tokens:,})"
        if cap.capped_by_max_total_tokens
        else ""
    )
    return (
        f"the logged start had max_total_num_tokens {log.max_total_num_tokens:,} at "
        f"{log.mem_fraction_static}; the rule gives {cap.tokens:,}{capped} ({err:.2%} off)"
        + (
            ""
            if err < 0.005
            else " — on a GPU this means the rule does not fit that start: "
            "check its KV dtype and page size; on a CPU, free host memory drifts while the "
            "server starts"
        )
    )


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
