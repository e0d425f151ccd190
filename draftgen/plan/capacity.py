"""The KV side of a plan: which model and how much free GPU memory, the KV pool that gives, how
a logged start checks the rule, and the headroom and other fractions and dtypes (`WhatIf`)."""

from __future__ import annotations

from draftgen.contract.sglang_flags import SGLangFlag, value_in
from draftgen.spec import GenerationJob, ServerSpec

from . import concurrency, kvcache
from . import headroom as headroom_mod
from . import layouts as layouts_mod
from .figures import Plan, PlanInputs, WhatIf
from .kvcache import MemoryInputError, MemoryProfile, StartLog
from .modelconfig import ModelConfig, ModelConfigError, config_location, load_model_config

WHAT_IF_FRACTIONS = (0.80, 0.85, 0.88, 0.90, 0.93)
LOSSY_ALTERNATIVE = "fp8_e4m3"
FP8_KV_DTYPES = ("fp8_e4m3", "fp8_e5m2")


def other_kv_dtype(kv_cache_dtype: str) -> str:
    """The dtype the what-if table sets beside the job's: fp8_e4m3 for a 16-bit KV cache (lossy:
    field facts, lesson 7), bf16 for an fp8 one."""
    return LOSSY_ALTERNATIVE if kv_cache_dtype not in FP8_KV_DTYPES else "bf16"


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


def pool_limits(server: ServerSpec) -> tuple[int | None, int]:
    """`--max-total-tokens` (None: unset) and `--page-size` (default 1) from `extraArgs`."""
    return (
        _extra_arg(server.extra_args, SGLangFlag.MAX_TOTAL_TOKENS),
        _extra_arg(server.extra_args, SGLangFlag.PAGE_SIZE) or 1,
    )


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


def plan_kv_capacity(plan: Plan, job: GenerationJob, inputs: PlanInputs) -> None:
    """Model, memory and the KV pool they give (`plan.capacity_tokens`: observed when known)."""
    tp = plan.tensor_parallel_size
    plan.model = _model(job, inputs, plan)
    if plan.model is not None:
        check_tensor_parallel(plan.model, tp)
    plan.measured_memory = _memory(job, inputs, plan.model, plan)
    plan.measured_attention_dp = _measured_attention_dp(job, inputs)
    plan.memory = _at_layout(plan)
    max_total_tokens, page_size = pool_limits(job.spec.server)
    if plan.model and plan.memory:
        cell = plan.model.cell_bytes(plan.kv_cache_dtype, tp // plan.layout.attention_dp)
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
    if plan.capacity:
        # One rank's rows hold dcp× the request tokens; the server has attention_dp such ranks.
        plan.rank_pool_tokens = plan.capacity.tokens * plan.layout.dcp
    plan.capacity_tokens = inputs.observed_kv_capacity_tokens or (
        plan.rank_pool_tokens * plan.layout.attention_dp if plan.rank_pool_tokens else None
    )


def _measured_attention_dp(job: GenerationJob, inputs: PlanInputs) -> int:
    """The layout free memory was measured at: spec.planning.measured's, else plain TP."""
    given = inputs.start_log is not None or inputs.free_before_load_gib is not None
    measured = job.spec.planning.measured
    return measured.attention_data_parallel_size if measured and not given else 1


def _at_layout(plan: Plan) -> MemoryProfile | None:
    """Free memory at the server's own layout: the extra attention weights DP attention puts on
    each GPU come out of what is free after loading (layouts.memory_at)."""
    memory, model = plan.measured_memory, plan.model
    if memory is None or plan.layout.attention_dp == plan.measured_attention_dp:
        return memory
    if model is None:
        return memory
    try:
        weights = layouts_mod.weights_of(model)
    except layouts_mod.LayoutNotPlanned as err:
        plan.warnings.append(
            f"server.attentionDataParallelSize {plan.layout.attention_dp}: {err}; the pool is "
            "planned as if each GPU held no more weights"
        )
        return memory
    return layouts_mod.memory_at(
        memory,
        weights,
        plan.tensor_parallel_size,
        plan.layout.attention_dp,
        plan.measured_attention_dp,
    )


def plan_headroom(plan: Plan, job: GenerationJob) -> None:
    """Headroom after the pool, and what other fractions and dtypes would give (needs the KV
    capacity, and the mean sequence for the decodes column)."""
    if not (plan.memory and plan.capacity and plan.model):
        return
    planning = job.spec.planning
    plan.headroom = headroom_mod.headroom(
        plan.memory, plan.capacity, planning.cuda_graph_gib, planning.min_headroom_gib
    )
    if plan.headroom.warning:
        plan.warnings.append(plan.headroom.warning)
    plan.what_if = _what_if(plan, job, *pool_limits(job.spec.server))


def _what_if(
    plan: Plan, job: GenerationJob, max_total_tokens: int | None, page_size: int
) -> list[WhatIf]:
    assert plan.memory and plan.model
    attn_tp = plan.tensor_parallel_size // plan.layout.attention_dp
    lossy = other_kv_dtype(plan.kv_cache_dtype)
    cell = plan.model.cell_bytes(plan.kv_cache_dtype, attn_tp)
    other_cell = plan.model.cell_bytes(lossy, attn_tp)
    d, rank_mrr = plan.layout.attention_dp, plan.max_running_requests
    rank_mrr = rank_mrr // d if rank_mrr else None  # SGLang divides it over the DP ranks
    rows = []
    for mf in sorted(set(WHAT_IF_FRACTIONS) | {plan.mem_fraction_static}):
        cap = kvcache.kv_capacity(
            plan.memory, mf, cell, plan.kv_cache_dtype, max_total_tokens, page_size
        )
        other = kvcache.kv_capacity(plan.memory, mf, other_cell, lossy, max_total_tokens, page_size)
        room = headroom_mod.headroom(
            plan.memory, cap, job.spec.planning.cuda_graph_gib, job.spec.planning.min_headroom_gib
        )
        rank = cap.tokens * plan.layout.dcp
        decodes = (
            d * concurrency.concurrent_decodes(rank, plan.mean_sequence_tokens, rank_mrr)
            if plan.mean_sequence_tokens
            else None
        )
        server = d * plan.layout.dcp
        rows.append(
            WhatIf(
                mf,
                cap.tokens * server,
                lossy,
                other.tokens * server,
                decodes,
                room.after_graphs_gib,
                room.thin,
            )
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
