"""Where the KV cache of an MLA model lives: data-parallel attention and decode context
parallelism, each layout's pool per rank and the server's total (pure functions).

Under plain TP every GPU holds the whole MLA latent of every request (the cell is not divided by
TP), so eight GPUs hold one pool. SGLang 0.5.23 has two ways out:

- `--attn-dp-size d`: `d` attention groups of `tp / d` GPUs, one scheduler and one KV pool each
  (`managers/data_parallel_controller.launch_tensor_parallel_group`); a request lives in one
  group's pool. Each pool is sized by the same rule as before
  (`mem_cache/kv_cache_configurator._profile_available_bytes`, `model_executor/
  pool_configurator.DefaultPoolConfigurator.calculate_pool_sizes`), from what is free after the
  weights, and each GPU now holds more attention weights (`attention_weights.py`).
- `--dcp-size c`: each request's KV rows are striped over `c` GPUs of its attention group; a
  GPU's `max_total_num_tokens` rows then hold `c` times as many request tokens
  (`kv_cache_configurator.logical_token_capacity`: rows × `attn_dcp_size`), with no extra weights.
  The allocator pages at `page_size × c`; SGLang turns its breakable prefill CUDA graph off
  (`arg_groups/cuda_graph_hook.disable_breakable_cudagraph_if_incompatible`; decode graphs stay);
  MLA backends on CUDA: flashinfer_mla, flashmla (not with fp8 KV), trtllm_mla (not with
  speculative decoding), cutedsl_mla, triton. Every step exchanges each layer's partial attention
  outputs over the `c` GPUs (`layers/dcp/comm.py`): its speed is not estimated here.

SGLang allows both together when `c` divides `tp / d` (`distributed/parallel_state` carves DCP
groups out of consecutive ranks), and not `--dp-size` replicas beside `--attn-dp-size`
(`arg_groups/parallel_hook.handle_data_parallelism`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .attention_weights import AttentionWeights, attention_weights, gqa_attention_weights
from .kvcache import GiB, MemoryProfile, max_total_num_tokens
from .modelconfig import ModelConfig


@dataclass(frozen=True, order=True)
class Layout:
    """How the `tp` GPUs of a server split attention and KV."""

    attention_dp: int = 1
    """`--attn-dp-size`: attention groups, each with its own scheduler and KV pool."""

    dcp: int = 1
    """`--dcp-size`: GPUs of a group that stripe each request's KV."""

    def label(self) -> str:
        parts = []
        if self.attention_dp > 1:
            parts.append(f"DP-attn {self.attention_dp}")
        if self.dcp > 1:
            parts.append(f"DCP {self.dcp}")
        return " × ".join(parts) or "plain TP"

    def flags(self) -> str:
        """The spec fields that choose it."""
        return (
            f"attentionDataParallelSize: {self.attention_dp}, decodeContextParallelSize: {self.dcp}"
        )


PLAIN = Layout()


def layouts(tp: int, mla: bool = True) -> list[Layout]:
    """Every layout SGLang 0.5.23 starts with at `--tp-size tp`: d divides tp, c divides tp/d.
    Decode context parallelism is planned for MLA models only (a GQA model's DCP cell depends on
    how its KV heads meet the DCP group: `ModelConfig.get_num_kv_heads(tp, dcp)`)."""
    return [
        Layout(d, c)
        for d in range(1, tp + 1)
        if tp % d == 0
        for c in range(1, tp // d + 1)
        if (tp // d) % c == 0 and (mla or c == 1)
    ]


class LayoutNotPlanned(ValueError):
    """The planner cannot size this layout for this model; the message says why."""


def weights_of(model: ModelConfig) -> AttentionWeights:
    """The attention weights DP attention re-shards (MLA, or GQA/MHA with all its shapes)."""
    if model.attention != "mla":
        if not (model.hidden_size and model.vocab_size and model.attention_dtype):
            raise LayoutNotPlanned(
                f"{model.source}: hidden_size or vocab_size is missing, so the attention "
                "weights DP attention copies cannot be sized"
            )
        assert model.num_heads and model.num_kv_heads and model.head_dim
        return gqa_attention_weights(
            num_layers=model.num_layers,
            hidden_size=model.hidden_size,
            num_heads=model.num_heads,
            num_kv_heads=model.num_kv_heads,
            head_dim=model.head_dim,
            v_head_dim=model.v_head_dim or model.head_dim,
            vocab_size=model.vocab_size,
            attention=model.attention_dtype,
        )
    if model.mla_shapes is None:
        raise LayoutNotPlanned(
            f"{model.source}: hidden_size, num_attention_heads, qk_nope_head_dim, v_head_dim or "
            "vocab_size is missing, so the attention weights DP attention copies cannot be sized"
        )
    return attention_weights(model.mla_shapes)


def memory_at(
    profile: MemoryProfile,
    weights: AttentionWeights,
    tp: int,
    attention_dp: int,
    measured_attention_dp: int = 1,
) -> MemoryProfile:
    """`profile` (free memory per GPU measured at `measured_attention_dp`) at `attention_dp`:
    the extra attention weights come out of what is free after loading."""
    if attention_dp == measured_attention_dp:
        return profile
    extra = weights.extra_bytes(tp, attention_dp, measured_attention_dp) / GiB
    detail = (
        f"{profile.detail}; at attentionDataParallelSize {attention_dp} each GPU holds "
        f"{extra:+.2f} GiB of attention weights and input embedding"
    )
    return replace(
        profile,
        free_after_load_gib=profile.free_after_load_gib - extra,
        detail=detail,
        source="estimated" if profile.source != "estimated" else profile.source,
    )


def rank_pool_tokens(
    model: ModelConfig,
    profile: MemoryProfile,
    mem_fraction_static: float,
    kv_cache_dtype: str,
    tp: int,
    layout: Layout,
    page_size: int = 1,
    max_total_tokens: int | None = None,
    measured_attention_dp: int = 1,
) -> int:
    """Request tokens one rank's KV pool holds at `layout` (0: no pool, SGLang cannot start).

    `profile` is free GPU memory as measured (or estimated) at `measured_attention_dp`. One rank
    is one attention group: it holds only its own requests; the server has `attention_dp` of
    them. Under DCP a GPU's rows hold `dcp` times as many request tokens. Raises
    `LayoutNotPlanned` for a layout other than plain TP on a model the planner cannot size."""
    if layout.dcp > 1 and model.attention != "mla":
        raise LayoutNotPlanned(
            f"decodeContextParallelSize {layout.dcp}: planned for MLA models only; "
            f"{model.architecture} is {model.attention.upper()}"
        )
    if layout == PLAIN and measured_attention_dp == 1:
        memory = profile
    else:
        memory = memory_at(
            profile, weights_of(model), tp, layout.attention_dp, measured_attention_dp
        )
    cell = model.cell_bytes(kv_cache_dtype, tp // layout.attention_dp)
    rows = max_total_num_tokens(memory, mem_fraction_static, cell, page_size)
    if max_total_tokens:
        rows = min(rows, max_total_tokens)
    return rows * layout.dcp


def graph_max_bs(gpu_memory_gib: float | None, tp: int, max_running_requests: int | None) -> int:
    """SGLang's default decode CUDA-graph batch (`arg_groups/memory_hook.
    handle_gpu_memory_settings`, by the GPU's memory in MiB), capped by
    `--max-running-requests`."""
    if gpu_memory_gib is None:
        bs = 160
    else:
        mib = gpu_memory_gib * 1024
        if mib < 20 * 1024:
            bs = 8
        elif mib < 35 * 1024:
            bs = 48 if tp < 4 else 160
        elif mib < 60 * 1024:
            bs = 32 if tp < 4 else 160
        elif mib < 160 * 1024:
            bs = 256 if tp < 4 else 512
        else:
            bs = 512
    return min(bs, max_running_requests) if max_running_requests else bs


def dp_graph_gib(attention_dp: int, max_bs: int) -> float:
    """SGLang's own allowance for DP attention's CUDA-graph padding per GPU
    (`arg_groups/memory_hook.reserve_for_graph_mb`: `max_bs × attn_dp_size × 3` MB, plus
    `× 1.5` more above a max batch of 300): graphs are captured per rank, but the MoE layers see
    the gathered batch of every rank (`layers/dp_attention.get_global_dp_buffer`)."""
    if attention_dp <= 1:
        return 0.0
    mb = max_bs * attention_dp * 3.0 + (max_bs * attention_dp * 1.5 if max_bs > 300 else 0.0)
    return mb / 1024
