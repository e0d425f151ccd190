"""A plan as text a person can act on, and as JSON for programs."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from draftgen.contract.sglang_scheduler import new_token_ratio_range

from .capacity import other_kv_dtype
from .eta import format_duration
from .figures import Plan
from .kvcache import GiB
from .layouts import Layout


def _n(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "?"
    return f"{value:,.{digits}f}"


def _cell_formula(plan: Plan) -> str:
    model, cap = plan.model, plan.capacity
    assert model and cap
    element = model.kv_element_bytes(plan.kv_cache_dtype)
    layout = plan.layout
    if model.attention == "mla":
        where = (
            "on every rank (the MLA latent is replicated, so one rank's pool is the server's "
            "capacity)"
            if layout == Layout()
            else f"on every GPU of an attention group; {layout.label()}: a GPU's rows hold "
            f"{layout.dcp}× request tokens, the server {layout.attention_dp} such pools"
        )
        return (
            f"({model.kv_lora_rank} + {model.qk_rope_head_dim}) × {model.num_layers} layers × "
            f"{element} bytes = {cap.cell_bytes:,} bytes per token, {where}"
        )
    heads = model.kv_heads_per_rank(plan.tensor_parallel_size // layout.attention_dp)
    return (
        f"{heads} KV heads per rank × ({model.head_dim} + {model.v_head_dim or model.head_dim})"
        f" × {model.num_layers} layers × {element} bytes = {cap.cell_bytes:,} bytes per token "
        "per rank"
    )


def _capacity(plan: Plan) -> list[str]:
    out = ["KV capacity (max_total_num_tokens)"]
    if plan.model:
        out.append(f"  model:  {plan.model.describe()}  [{plan.model.source}]")
    if plan.memory:
        out.append(
            f"  memory: {plan.memory.detail}; loading takes {plan.memory.weights_gib:.2f} "
            "GiB per rank"
        )
    cap = plan.capacity
    if cap and plan.memory:
        out.append(f"  cell:   {_cell_formula(plan)}")
        m = plan.memory
        out.append(
            f"  pool:   {m.free_after_load_gib:.2f} − {m.free_before_load_gib:.2f} × "
            f"(1 − {cap.mem_fraction_static}) = {cap.rest_gib:.2f} GiB → "
            f"{cap.uncapped_tokens:,} tokens"
            + (
                f", capped by --max-total-tokens to {cap.tokens:,}"
                if cap.capped_by_max_total_tokens
                else ""
            )
        )
        out.append(
            f"  below memFractionStatic {plan.min_mem_fraction_static:.3f} the weights leave "
            "no KV pool and SGLang refuses to start"
        )
    elif not plan.capacity_tokens:
        out.append("  not computed (see Missing below)")
    if plan.capacity_tokens and cap and plan.capacity_tokens != cap.tokens:
        out.append(
            f"  the running server reports {plan.capacity_tokens:,} tokens; the plan uses that"
        )
    elif plan.capacity_tokens and not cap:
        out.append(f"  the running server reports {plan.capacity_tokens:,} tokens")
    if plan.log_check:
        out.append(f"  check:  {plan.log_check}")
    if plan.what_if:
        lossy = other_kv_dtype(plan.kv_cache_dtype)
        out.append("")
        out.append(
            f"  {'memFractionStatic':>17}  {plan.kv_cache_dtype + ' tokens':>13}  "
            f"{lossy + ' tokens':>16}  {'decodes':>7}  {'free after graphs':>17}"
        )
        for row in plan.what_if:
            mark = " ←" if row.mem_fraction_static == plan.mem_fraction_static else ""
            thin = "  THIN" if row.thin else ""
            out.append(
                f"  {row.mem_fraction_static:>17.2f}  {row.tokens:>13,}  "
                f"{row.other_dtype_tokens:>16,}  {_n(row.decodes):>7}  "
                f"{max(row.headroom_gib, 0):>13.2f} GiB{thin}{mark}"
            )
        if lossy.startswith("fp8"):
            out.append(
                f"  ({lossy} is lossy: it visibly degraded an INT4 MLA model; it needs "
                "server.allowLossyKVCache)"
            )
    return out


_BASIS = {"measured": "meas", "job": "job", "estimated": "est", "upper bound": "≤"}


def _layouts(plan: Plan) -> list[str] | None:
    """The what-if table over every attention layout (layout_table.py), or why there is none."""
    if not plan.layouts:
        return plan.layout_notes or None
    plain = next((r for r in plan.layouts if r.layout == Layout()), None)
    base = plain.total_tokens if plain and plain.total_tokens else None
    out = [
        f"  {'layout':<18} {'attn TP':>7} {'+weights':>9} {'pool/rank':>10} {'server':>10} "
        f"{'×':>5} {'decodes':>7} {'tok/s/req':>10} {'ceiling':>8} {'ETA':>7}  status"
    ]
    for r in plan.layouts:
        mark = (" ← job" if r.current else "") + ("  ★ best lossless" if r.best else "")
        ratio = f"{r.total_tokens / base:.2f}" if base and r.starts else "-"
        speed = (
            f"{_BASIS[r.speed_basis]} {r.decode_tokens_per_second:.1f}"
            if r.decode_tokens_per_second and r.speed_basis
            else "?"
        )
        out.append(
            f"  {r.layout.label():<18} {r.attention_tp:>7} {r.extra_weights_gib:>+5.2f} GiB "
            f"{_n(r.rank_tokens):>10} {_n(r.total_tokens):>10} {ratio:>5} "
            f"{_n(r.decodes) if r.starts else '-':>7} {speed:>10} "
            f"{_n(r.ceiling_tokens_per_second) if r.starts else '-':>8} "
            f"{(format_duration(r.eta_seconds) or '?') if r.starts else '-':>7}  {r.status}{mark}"
        )
    for r in plan.layouts:
        if r.reason:
            out.append(f"  {r.layout.label()}: {r.status}: {r.reason}")
    best = next((r for r in plan.layouts if r.best), None)
    lossy = plan.kv_cache_dtype.startswith("fp8")
    if best is not None:
        advice = f" and extraArgs [{', '.join(best.advice.split())}]" if best.advice else ""
        out.append(
            f"  best {'(at lossy ' + plan.kv_cache_dtype + ' KV) ' if lossy else 'lossless '}"
            f"layout (a plan, not a measurement): {best.layout.label()}: server."
            f"{best.layout.flags().replace(', ', ', server.')}{advice}"
        )
    out += [
        "  pool/rank is one attention group's pool and the longest request it holds; server = "
        "pool/rank × groups; decodes fit per rank",
        "  estimated: per-request speed at another layout (decoding reads every weight a GPU "
        "holds each step: speed × weights per GPU at the job's layout / at this one); DP "
        "attention pads each step to the busiest rank, so the ceiling assumes balanced ranks; "
        "DCP's per-step exchange of partial attention outputs is not modelled (≤: an upper "
        "bound, never marked best without spec.planning.measuredLayouts)",
        "  graphs: the job's CUDA-graph memory plus SGLang's DP-attention allowance "
        "(memory_hook.reserve_for_graph_mb: max_bs × d × 3 MB, +1.5 above 300); a row may ask "
        "for a decode graph batch that covers one rank's decodes",
    ]
    if plan.attention_weights_formula:
        out.append(f"  weights: {plan.attention_weights_formula}")
    return out + [f"  {n}" for n in plan.layout_notes]


def _concurrency(plan: Plan) -> list[str]:
    out = ["Concurrency and throughput"]
    for d in plan.lengths:
        out.append(
            f"  {d.name:<20} prompt {_n(d.prompt_tokens):>7}  completion "
            f"{_n(d.completion_tokens):>7}  ({d.source})"
        )
    if plan.mean_sequence_tokens is not None:
        out.append(
            f"  mean sequence {plan.mean_sequence_tokens:,.0f} tokens (prompt + completion, "
            "weighted by expected samples): the KV each request holds by its end"
        )
    if plan.decodes is not None and plan.capacity_tokens:
        cap = (
            f", capped by maxRunningRequests {plan.max_running_requests}"
            if plan.max_running_requests and plan.decodes == plan.max_running_requests
            else ""
        )
        groups = plan.layout.attention_dp
        ranks = plan.rank_pool_tokens
        if groups > 1 and ranks and plan.capacity_tokens == ranks * groups:
            out.append(
                f"  decodes that fit: {groups} ranks × ({plan.rank_pool_tokens:,} / "
                f"{plan.mean_sequence_tokens:,.0f}, each rank's own) = {plan.decodes}{cap} per "
                "replica"
            )
        else:
            out.append(
                f"  decodes that fit: {plan.capacity_tokens:,} / "
                f"{plan.mean_sequence_tokens:,.0f} = {plan.decodes}{cap} per replica"
            )
    if plan.ceiling_tokens_per_second is not None:
        replicas = f" × {plan.replicas} replicas" if plan.replicas > 1 else ""
        out.append(
            f"  throughput ceiling: {plan.decodes} × {plan.decode_tokens_per_second:g} tok/s"
            f"{replicas} = {plan.ceiling_tokens_per_second:,.0f} completion tok/s; more "
            "client concurrency only queues"
        )
    init, floor = new_token_ratio_range(plan.schedule_conservativeness)
    out.append(
        f"  SGLang admission: scheduleConservativeness {plan.schedule_conservativeness:g} → a "
        "queued request waits until its prompt + maxNewTokens fit beside "
        f"{init:.3g} (decaying to {floor:.3g}) × each running request's remaining tokens"
    )
    if plan.verdict:
        out.append(f"  observed: {plan.verdict.message}")
    return out


def _optional(title: str, body: list[str] | None, absent: str) -> list[str]:
    """A section whose figures may not exist: `absent` says why when `body` is None."""
    return [title, *(body if body is not None else [f"  {absent}"])]


def _host(plan: Plan) -> list[str] | None:
    hm = plan.host_memory
    if hm is None:
        return None
    verdict = "fits" if hm.ok else "DOES NOT FIT"
    per_node = " on each node" if plan.nodes_per_replica > 1 else ""
    return [
        f"  {hm.arithmetic}{per_node}: {verdict}",
        f"  largest safe size: {hm.max_safe_gb_per_rank} GB per rank "
        "(--hicache-size is per tensor-parallel rank)",
        "  it helps prefix reuse only; it adds no decode slots",
    ]


def _headroom(plan: Plan) -> list[str] | None:
    h = plan.headroom
    if h is None:
        return None
    status = "THIN" if h.thin else "ok"
    return [
        f"  {h.after_pool_gib:.2f} GiB after the pool − {h.cuda_graph_gib:.2f} GiB CUDA graphs "
        f"({h.cuda_graph_source}) = {h.after_graphs_gib:.2f} GiB for prefill activations "
        f"(warn below {h.min_headroom_gib:.2f}): {status}"
    ]


def _eta(plan: Plan) -> list[str]:
    out = ["ETA"]
    e = plan.eta
    if e is None:
        out.append("  not computed: needs a throughput (the ceiling, or --measured-throughput)")
    else:
        out.append(
            f"  at {e.throughput_tokens_per_second:,.0f} completion tok/s ({e.basis}), datasets "
            "interleaved; `done in` is when each is expected to finish:"
        )
        out.append(f"  {'dataset':<20} {'to generate':>21} {'done in':>8}")
    for w in plan.work:
        secs = e.per_dataset_seconds.get(w.name) if e else None
        done = f", {w.done_tokens:,} done" if w.done_tokens else ""
        out.append(
            f"  {w.name:<20} {_n(w.remaining_tokens):>14} tokens {format_duration(secs) or '?':>8}"
            f"   ({w.basis}{done})"
        )
    if e:
        total = format_duration(e.total_seconds) or "unknown (some datasets have no token figure)"
        out.append(f"  {'total':<20} {_n(e.total_tokens):>14} tokens {total:>8}")
    if plan.eta_guesses:
        out.append("  guessed, not measured (the ETA is only as good as these):")
        out += [f"    - {g}" for g in plan.eta_guesses]
    return out


def render_text(plan: Plan) -> str:
    header = (
        f"Capacity plan for {plan.job_name}: tensor parallel {plan.tensor_parallel_size}"
        + (
            f" over {plan.nodes_per_replica} nodes"
            f" ({plan.tensor_parallel_size // plan.nodes_per_replica} ranks each)"
            if plan.nodes_per_replica > 1
            else ""
        )
        + f" × {plan.replicas} replica{'s' if plan.replicas != 1 else ''}, memFractionStatic "
        f"{plan.mem_fraction_static}, kvCacheDtype {plan.kv_cache_dtype}"
    )
    sections = [
        [header],
        _capacity(plan),
        _optional(
            "Attention layouts of the same GPUs (data-parallel attention, decode context "
            "parallelism)",
            _layouts(plan),
            "not computed (needs the model's config and the KV capacity)",
        ),
        _concurrency(plan),
        _optional(
            "Host memory (hierarchical cache)",
            _host(plan),
            "hierarchical cache off: nothing to check",
        ),
        _optional(
            "Headroom (GPU memory per rank after the KV pool)",
            _headroom(plan),
            "not computed (needs the KV capacity)",
        ),
        _eta(plan),
    ]
    if plan.warnings:
        sections.append(["Warnings"] + [f"  - {w}" for w in plan.warnings])
    if plan.missing:
        sections.append(
            ["Missing (the plan is incomplete without these)"] + [f"  - {m}" for m in plan.missing]
        )
    return "\n\n".join("\n".join(s) for s in sections) + "\n"


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        for name in (
            "weights_gib",
            "min_mem_fraction_static",
            "pool_gib",
            "after_graphs_gib",
            "thin",
            "warning",
            "total_gb",
            "budget_gb",
            "max_safe_gb_per_rank",
            "ok",
            "sequence_tokens",
            "remaining_tokens",
        ):
            if hasattr(type(value), name) and isinstance(getattr(type(value), name), property):
                out[name] = _plain(getattr(value, name))
        return out
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def to_dict(plan: Plan) -> dict[str, Any]:
    """Every figure of the plan; GiB and bytes as named, durations also as `17h20m`."""
    out = _plain(plan)
    if plan.eta:
        out["eta"]["total"] = plan.eta.total
    out["cell_bytes"] = plan.capacity.cell_bytes if plan.capacity else None
    out["pool_bytes"] = int(plan.capacity.pool_gib * GiB) if plan.capacity else None
    return out


def render_json(plan: Plan) -> str:
    return json.dumps(to_dict(plan), indent=2, sort_keys=False) + "\n"
