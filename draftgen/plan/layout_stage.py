"""The layout stage of a plan: the what-if table over every attention layout of the server's
GPUs (`layout_table.py`), with what it rests on, and the check that one rank holds the longest
request (`draftgen validate` and `draftgen plan` both apply it)."""

from __future__ import annotations

from draftgen.contract.sglang_flags import SGLangFlag, value_in
from draftgen.spec import GenerationJob

from .capacity import pool_limits
from .figures import Plan, PlanInputs
from .layout_table import LayoutInputs, layout_rows
from .layouts import Layout, LayoutNotPlanned, weights_of


def longest_request_tokens(job: GenerationJob) -> int | None:
    """The longest prompt the plan knows of (the largest expected prompt: datasets' `expected`,
    else the job's mean) plus the largest `maxNewTokens`: what one rank's pool must hold."""
    planning = job.spec.planning
    prompts = [ds.expected.prompt_tokens for ds in job.spec.datasets if ds.expected]
    prompts.append(planning.mean_prompt_tokens)
    known = [p for p in prompts if p]
    if not known:
        return None
    new = max(job.spec.sampling_for(ds).max_new_tokens for ds in job.spec.datasets)
    return max(known) + new


def rank_fit_problem(plan: Plan, job: GenerationJob) -> str | None:
    """Why one rank's pool cannot hold the job's longest request, with the fix; None if it can
    or the plan cannot tell."""
    need = longest_request_tokens(job)
    rank = plan.rank_pool_tokens
    if need is None or not rank or rank >= need or plan.layout == Layout():
        return None
    return (
        f"spec.server.attentionDataParallelSize: one rank's KV pool holds {rank:,} tokens at "
        f"{plan.layout.label()}, below the longest request ({need:,} tokens: the longest "
        "expected prompt + maxNewTokens), which SGLang would never admit; use a smaller "
        "attentionDataParallelSize, a decodeContextParallelSize, or a smaller maxNewTokens"
    )


def _graph_max_bs(job: GenerationJob) -> int | None:
    value = value_in(job.spec.server.extra_args, SGLangFlag.CUDA_GRAPH_MAX_BS_DECODE)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def plan_layouts(plan: Plan, job: GenerationJob, inputs: PlanInputs) -> None:
    """Fill `plan.layouts` (needs the model and the measured memory), or say why not."""
    problem = rank_fit_problem(plan, job)
    if problem:
        plan.warnings.append(problem)
    if plan.model is None or plan.measured_memory is None:
        return
    try:
        weights = weights_of(plan.model)
    except LayoutNotPlanned as err:
        plan.layout_notes.append(f"layouts: not planned: {err}")
        return
    plan.attention_weights_formula = weights.formula
    model = plan.model
    if model.attention != "mla" and model.num_kv_heads:
        plan.layout_notes.append(
            f"{model.architecture} has {model.num_kv_heads} KV heads split over tensor "
            "parallelism: data-parallel attention adds KV tokens only while the attention TP "
            f"(tp / d) exceeds them (below that, heads are copied to every GPU); past that it "
            "only copies attention weights"
        )
    planning = job.spec.planning
    max_total_tokens, page_size = pool_limits(job.spec.server)
    measured = {
        Layout(m.attention_data_parallel_size, m.decode_context_parallel_size): (
            m.decode_tokens_per_second
        )
        for m in planning.measured_layouts
    }
    plan.layouts = layout_rows(
        LayoutInputs(
            model=plan.model,
            memory=plan.measured_memory,
            measured_attention_dp=plan.measured_attention_dp,
            tp=plan.tensor_parallel_size,
            job_layout=plan.layout,
            mem_fraction_static=plan.mem_fraction_static,
            kv_cache_dtype=plan.kv_cache_dtype,
            page_size=page_size,
            max_total_tokens=max_total_tokens,
            max_running_requests=plan.max_running_requests,
            mean_sequence_tokens=plan.mean_sequence_tokens,
            longest_request_tokens=longest_request_tokens(job),
            decode_tokens_per_second=plan.decode_tokens_per_second,
            measured_speeds=measured,
            cuda_graph_gib=planning.cuda_graph_gib,
            min_headroom_gib=planning.min_headroom_gib,
            gpu_memory_gib=inputs.gpu_memory_gib or planning.gpu_memory_gib,
            explicit_graph_max_bs=_graph_max_bs(job),
            replicas=plan.replicas,
            work=plan.work,
        )
    )
    current = next((r for r in plan.layouts if r.current), None)
    if current is None or current.layout == Layout():
        return
    if current.status in ("thin", "cannot start"):
        plan.warnings.append(
            f"{current.layout.label()}: about {current.headroom_gib:.2f} GiB per GPU left after "
            f"CUDA graphs ({current.graphs_gib:.2f} GiB with SGLang's DP-attention allowance)"
            + (f": {current.reason}" if current.reason else "")
        )
    if current.advice:
        plan.warnings.append(
            f"{current.layout.label()}: SGLang's default decode CUDA-graph batch per rank is far "
            f"above the {current.decodes} decodes the server holds over its ranks, and its "
            f"DP-attention allowance grows with it; add `{current.advice}` to server.extraArgs to "
            "keep that memory for prefill"
        )
