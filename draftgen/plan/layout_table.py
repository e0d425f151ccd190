"""The what-if table over every layout of `tp` GPUs (`layouts.py`): pool per rank, the server's
tokens, decodes, the throughput ceiling and the ETA for each, which cannot start and why, and
the best lossless one.

What is estimated, said in the report too:
- per-request decode speed at another layout: decoding reads every weight a GPU holds each step,
  so a GPU holding more attention weights (`d×` the split ones) is slower in proportion:
  `speed × weights per GPU at the job's layout / weights per GPU at this one`; a measured figure
  (`spec.planning.measuredLayouts`) replaces it. DP-attention batches are padded to the busiest
  rank (`layers/dp_attention`), so the ceiling assumes balanced ranks, which draftgen's per-rank
  admission keeps. DCP's per-step exchange is not modelled: a DCP row's ceiling is an upper
  bound, and such a row is the best only with a measured speed.
- CUDA graphs: the job's graph memory (measured or estimated) plus SGLang's own DP-attention
  allowance (`layouts.dp_graph_gib`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from . import concurrency
from . import eta as eta_mod
from .attention_weights import AttentionWeights
from .eta import DatasetWork
from .headroom import cuda_graph_estimate
from .kvcache import GiB, MemoryProfile
from .layouts import (
    Layout,
    dp_graph_gib,
    graph_max_bs,
    layouts,
    memory_at,
    rank_pool_tokens,
    weights_of,
)
from .modelconfig import ModelConfig

SpeedBasis = Literal["measured", "job", "estimated", "upper bound"]
Status = Literal["ok", "thin", "cannot start", "request too long"]


@dataclass(frozen=True)
class LayoutRow:
    layout: Layout
    attention_tp: int
    extra_weights_gib: float
    """Attention weights + input embedding one GPU holds beyond plain TP."""
    rank_tokens: int
    """One rank's pool in request tokens: the longest request it can hold."""
    total_tokens: int
    decodes: int | None
    """Decodes that fit over all ranks (each rank's own floor)."""
    decode_tokens_per_second: float | None
    speed_basis: SpeedBasis | None
    ceiling_tokens_per_second: float | None
    eta_seconds: float | None
    graph_max_bs: int
    graphs_gib: float
    headroom_gib: float
    status: Status
    reason: str = ""
    advice: str = ""
    """An extraArgs flag this layout wants (a smaller decode CUDA-graph batch)."""
    current: bool = False
    best: bool = False

    @property
    def starts(self) -> bool:
        return self.status in ("ok", "thin")


@dataclass(frozen=True)
class LayoutInputs:
    """What the table needs from the plan."""

    model: ModelConfig
    memory: MemoryProfile
    """Free GPU memory as measured/estimated at `measured_attention_dp`."""
    measured_attention_dp: int
    tp: int
    job_layout: Layout
    mem_fraction_static: float
    kv_cache_dtype: str
    page_size: int
    max_total_tokens: int | None
    max_running_requests: int | None
    mean_sequence_tokens: float | None
    longest_request_tokens: int | None
    decode_tokens_per_second: float | None
    measured_speeds: dict[Layout, float]
    cuda_graph_gib: float | None
    min_headroom_gib: float
    gpu_memory_gib: float | None
    explicit_graph_max_bs: int | None
    replicas: int
    work: list[DatasetWork]


def _graph_bs_for(decodes_per_rank: int | None) -> int:
    """A decode graph batch that covers the decodes one rank holds, rounded up to 8."""
    need = max(decodes_per_rank or 1, 1)
    return int(math.ceil(need / 8) * 8)


def layout_rows(i: LayoutInputs) -> list[LayoutRow]:
    """One row per layout of `i.tp` GPUs; marks the job's and the best lossless one."""
    weights = weights_of(i.model)
    job_memory = memory_at(
        i.memory, weights, i.tp, i.job_layout.attention_dp, i.measured_attention_dp
    )
    base_graphs, _ = cuda_graph_estimate(i.memory, i.cuda_graph_gib)
    default_bs = i.explicit_graph_max_bs or graph_max_bs(
        i.gpu_memory_gib, i.tp, i.max_running_requests
    )
    base_graphs -= dp_graph_gib(i.measured_attention_dp, default_bs)
    rows = []
    for layout in layouts(i.tp, mla=i.model.attention == "mla"):
        rows.append(_row(i, layout, weights, job_memory, base_graphs, default_bs))
    return _mark_best(rows)


def _row(
    i: LayoutInputs,
    layout: Layout,
    weights: AttentionWeights,
    job_memory: MemoryProfile,
    base_graphs: float,
    default_bs: int,
) -> LayoutRow:
    d = layout.attention_dp
    memory = memory_at(i.memory, weights, i.tp, d, i.measured_attention_dp)
    # Attention weights this layout holds per GPU beyond plain TP's.
    plain = memory_at(i.memory, weights, i.tp, 1, i.measured_attention_dp)
    extra = plain.free_after_load_gib - memory.free_after_load_gib
    rank = rank_pool_tokens(
        i.model,
        i.memory,
        i.mem_fraction_static,
        i.kv_cache_dtype,
        i.tp,
        layout,
        i.page_size,
        i.max_total_tokens,
        i.measured_attention_dp,
    )
    rank_mrr = i.max_running_requests // d if i.max_running_requests else None
    per_rank = (
        concurrency.concurrent_decodes(rank, i.mean_sequence_tokens, rank_mrr)
        if i.mean_sequence_tokens and rank > 0
        else None
    )
    decodes = per_rank * d if per_rank is not None else None
    speed, basis = _speed(i, layout, memory, job_memory)
    ceiling = decodes * speed * i.replicas if decodes is not None and speed else None
    eta = eta_mod.eta(i.work, ceiling, "ceiling").total_seconds if ceiling else None
    reserved = i.memory.free_before_load_gib * (1 - i.mem_fraction_static)
    rows_gib = rank // layout.dcp * i.model.cell_bytes(i.kv_cache_dtype, i.tp // d) / GiB
    after_pool = memory.free_after_load_gib - rows_gib
    bs = default_bs
    graphs = base_graphs + dp_graph_gib(d, bs)
    advice = ""
    if d > 1 and not i.explicit_graph_max_bs and after_pool - graphs < i.min_headroom_gib:
        smaller = min(_graph_bs_for(per_rank), default_bs)
        if smaller < default_bs:
            bs, graphs = smaller, base_graphs + dp_graph_gib(d, smaller)
            advice = f"--cuda-graph-max-bs-decode {smaller}"
    headroom = after_pool - graphs
    status: Status = "ok"
    reason = ""
    if rank <= 0:
        status = "cannot start"
        need = 1 - memory.free_after_load_gib / memory.free_before_load_gib
        reason = (
            f"the attention weights ({extra:+.2f} GiB per GPU beside plain TP) leave no KV pool "
            "at "
            f"memFractionStatic {i.mem_fraction_static}"
            + (f"; it needs above {need:.3f}" if 0 < need < 1 else "")
        )
        advice = ""
    elif headroom < 0:
        status = "cannot start"
        reason = (
            f"CUDA graphs up to a batch of {bs} ({graphs:.2f} GiB with SGLang's DP-attention "
            f"allowance) do not fit the {reserved:.2f} GiB kept free: lower memFractionStatic, "
            "or a smaller --cuda-graph-max-bs-decode (decodes above it run without graphs)"
        )
    elif i.longest_request_tokens and rank < i.longest_request_tokens:
        status = "request too long"
        reason = (
            f"a request of {i.longest_request_tokens:,} tokens (longest prompt + maxNewTokens) "
            f"does not fit one rank's {rank:,}"
        )
    elif headroom < i.min_headroom_gib:
        status = "thin"
    return LayoutRow(
        layout=layout,
        attention_tp=i.tp // d,
        extra_weights_gib=extra,
        rank_tokens=rank,
        total_tokens=rank * d,
        decodes=decodes,
        decode_tokens_per_second=speed,
        speed_basis=basis,
        ceiling_tokens_per_second=ceiling,
        eta_seconds=eta,
        graph_max_bs=bs,
        graphs_gib=graphs,
        headroom_gib=headroom,
        status=status,
        reason=reason,
        advice=advice,
        current=layout == i.job_layout,
    )


def _speed(
    i: LayoutInputs, layout: Layout, memory: MemoryProfile, job_memory: MemoryProfile
) -> tuple[float | None, SpeedBasis | None]:
    if layout in i.measured_speeds:
        return i.measured_speeds[layout], "measured"
    if not i.decode_tokens_per_second:
        return None, None
    if layout == i.job_layout:
        return i.decode_tokens_per_second, "job"
    scaled = i.decode_tokens_per_second * job_memory.weights_gib / memory.weights_gib
    return scaled, ("upper bound" if layout.dcp > 1 else "estimated")


def _mark_best(rows: list[LayoutRow]) -> list[LayoutRow]:
    """The layout with the highest ceiling (tokens when no speed is known) among those that start
    and whose speed has a basis; fewer groups first on a tie."""
    eligible = [r for r in rows if r.starts and r.speed_basis != "upper bound"]
    if not eligible:
        return rows

    def key(r: LayoutRow) -> tuple[float, float, int, int]:
        return (
            r.ceiling_tokens_per_second or 0.0,
            float(r.total_tokens),
            -r.layout.attention_dp,
            -r.layout.dcp,
        )

    best = max(eligible, key=key)
    return [replace(r, best=True) if r is best else r for r in rows]
