"""What each GPU holds of an MLA model's attention weights at each data-parallel attention size.

With `--attn-dp-size d` SGLang 0.5.23 runs attention at attention-TP `tp / d`
(`runtime_context.derive_attn_tp_size`), so whatever attention splits over attention TP is held
`d` times larger on each GPU. From `models/deepseek_v2.py` (`DeepseekV2AttentionMLA.__init__`)
and `models/deepseek_common/deepseek_weight_loader.py` (`post_load_weights`):

- replicated on every GPU (the same at every d): `fused_qkv_a_proj_with_mqa`
  (`hidden × (q_lora_rank + kv_lora_rank + qk_rope_head_dim)`, a `ReplicatedLinear`);
- split over attention TP (`parallel_group="attn_tp"`): `q_b_proj`
  (`q_lora_rank × heads × (qk_nope + qk_rope)`), `kv_b_proj`
  (`kv_lora_rank × heads × (qk_nope + v_head)`), `o_proj` (`heads × v_head × hidden`), and the
  `w_kc`/`w_vc` the loader cuts out of `kv_b_proj` with `.contiguous()` (new memory, as many
  elements as `kv_b_proj`, which stays loaded);
- the input embedding (`vocab × hidden`): `VocabParallelEmbedding` with
  `layers/vocab_parallel_embedding.get_embedding_tp_kwargs`, split over the attention-TP group
  under DP attention (over all of TP without). `lm_head` stays on full TP unless
  `--enable-dp-lm-head`; experts and dense MLPs stay where they are.

Decode context parallelism copies no weights for these models (`--dcp-replicate-q-proj` is only
defaulted on for Kimi-K3: `arg_groups/model_overrides/kimi_k3.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# Element sizes of the checkpoint dtypes SGLang loads attention in.
_DTYPE_BYTES = {"bfloat16": 2.0, "float16": 2.0, "float32": 2.0, "float8_e4m3fn": 1.0}
_FP8_BLOCK = 128
"""DeepSeek-V3's fp8 checkpoints keep one float32 scale per 128 × 128 block."""


@dataclass(frozen=True)
class AttentionDtype:
    """How the checkpoint stores the attention projections."""

    element_bytes: float
    """Bytes per weight element, scales included."""

    why: str
    """Where that came from in the config, for the report."""


def _ignored(ignore: Any, module: str) -> bool:
    """Does a compressed-tensors `ignore` list (names or `re:` patterns) leave `module` alone?"""
    for entry in ignore if isinstance(ignore, list) else []:
        if not isinstance(entry, str):
            continue
        if entry.startswith("re:"):
            if re.fullmatch(entry[3:], module) or re.search(entry[3:], module):
                return True
        elif module.endswith(entry) or entry in module:
            return True
    return False


def attention_dtype(cfg: dict[str, Any], checkpoint_dtype: str) -> AttentionDtype:
    """Bytes per attention weight from the config's `quantization_config` (absent: the
    checkpoint's dtype; SGLang serves float32 checkpoints in 16 bits)."""
    base = _DTYPE_BYTES.get(checkpoint_dtype.replace("torch.", ""), 2.0)
    q = cfg.get("quantization_config")
    if not isinstance(q, dict):
        return AttentionDtype(base, f"{checkpoint_dtype} (no quantization_config)")
    method = str(q.get("quant_method", "?"))
    probe = "model.layers.0.self_attn.o_proj"
    skipped = q.get("ignore") or q.get("ignored_layers") or q.get("modules_to_not_convert")
    if _ignored(skipped, probe):
        return AttentionDtype(
            base, f"{checkpoint_dtype}: quantization_config ({method}) leaves self_attn unquantized"
        )
    if method == "fp8":
        block = q.get("weight_block_size") or [_FP8_BLOCK, _FP8_BLOCK]
        scale = 4.0 / (int(block[0]) * int(block[1]))
        return AttentionDtype(1.0 + scale, f"fp8 with float32 scales per {block[0]}×{block[1]}")
    bits = _bits(q)
    if bits is not None:
        group = _group_size(q) or 128
        return AttentionDtype(
            bits / 8 + 2.0 / group, f"{method} {bits}-bit, a 16-bit scale per {group} weights"
        )
    return AttentionDtype(base, f"{checkpoint_dtype} (quantization {method} not read: assumed)")


def _bits(q: dict[str, Any]) -> int | None:
    if isinstance(q.get("bits"), int):
        return int(q["bits"])
    for group in (q.get("config_groups") or {}).values():
        weights = group.get("weights") if isinstance(group, dict) else None
        if isinstance(weights, dict) and isinstance(weights.get("num_bits"), int):
            return int(weights["num_bits"])
    return None


def _group_size(q: dict[str, Any]) -> int | None:
    if isinstance(q.get("group_size"), int) and q["group_size"] > 0:
        return int(q["group_size"])
    for group in (q.get("config_groups") or {}).values():
        weights = group.get("weights") if isinstance(group, dict) else None
        if isinstance(weights, dict) and isinstance(weights.get("group_size"), int):
            return int(weights["group_size"])
    return None


@dataclass(frozen=True)
class MLAShapes:
    """The shapes of an MLA model that size its attention weights."""

    num_layers: int
    hidden_size: int
    num_heads: int
    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    vocab_size: int
    attention: AttentionDtype


@dataclass(frozen=True)
class AttentionWeights:
    """Bytes of the attention weights (and input embedding) of the whole model, by how SGLang
    places them under DP attention."""

    replicated_bytes: float
    """On every GPU at every d (the fused q_a + kv_a projection of every layer)."""

    split_bytes: float
    """Split over attention TP: q_b, kv_b, w_kc/w_vc and o_proj of every layer."""

    embedding_bytes: float
    """The input embedding (16-bit), split over attention TP."""

    per_layer_split_elements: int
    formula: str
    """The arithmetic, for the report."""

    kv_head_bytes: float = 0.0
    """GQA/MHA: the k and v projections of one KV head over all layers (0 for MLA)."""

    num_kv_heads: int = 0
    """GQA/MHA: KV heads, sharded over attention TP and replicated when fewer than its ranks."""

    def per_gpu_bytes(self, tp: int, attention_dp: int) -> float:
        """What one GPU holds of these at `--tp-size tp --attn-dp-size attention_dp`."""
        attn_tp = tp // attention_dp
        kv = self.kv_head_bytes * max(1, self.num_kv_heads // attn_tp) if self.num_kv_heads else 0
        return self.replicated_bytes + (self.split_bytes + self.embedding_bytes) / attn_tp + kv

    def extra_bytes(self, tp: int, attention_dp: int, from_dp: int = 1) -> float:
        """What one GPU holds more at `attention_dp` than at `from_dp` (negative for less)."""
        return self.per_gpu_bytes(tp, attention_dp) - self.per_gpu_bytes(tp, from_dp)


def attention_weights(s: MLAShapes) -> AttentionWeights:
    """The attention weights of an MLA model from its shapes (the module docstring's rules)."""
    qk_head = s.qk_nope_head_dim + s.qk_rope_head_dim
    if s.q_lora_rank:
        fused_a = s.hidden_size * (s.q_lora_rank + s.kv_lora_rank + s.qk_rope_head_dim)
        q_b = s.q_lora_rank * s.num_heads * qk_head
        q_text = f"q_b {s.q_lora_rank}×{s.num_heads}×{qk_head}"
    else:  # DeepSeek-V2-Lite: q_proj is column-parallel, kv_a replicated.
        fused_a = s.hidden_size * (s.kv_lora_rank + s.qk_rope_head_dim)
        q_b = s.hidden_size * s.num_heads * qk_head
        q_text = f"q_proj {s.hidden_size}×{s.num_heads}×{qk_head}"
    kv_b = s.kv_lora_rank * s.num_heads * (s.qk_nope_head_dim + s.v_head_dim)
    o_proj = s.num_heads * s.v_head_dim * s.hidden_size
    split = q_b + 2 * kv_b + o_proj  # kv_b_proj plus its w_kc/w_vc copies
    element = s.attention.element_bytes
    formula = (
        f"per layer, split over attention TP: {q_text} + kv_b {s.kv_lora_rank}×{s.num_heads}×"
        f"{s.qk_nope_head_dim + s.v_head_dim} × 2 (with its w_kc/w_vc copies) + o_proj "
        f"{s.num_heads}×{s.v_head_dim}×{s.hidden_size} = {split:,} weights; replicated: fused "
        f"q_a+kv_a {fused_a:,}; × {s.num_layers} layers × {element:g} bytes "
        f"({s.attention.why}); input embedding {s.vocab_size:,}×{s.hidden_size} × 2 bytes"
    )
    return AttentionWeights(
        replicated_bytes=fused_a * s.num_layers * element,
        split_bytes=split * s.num_layers * element,
        embedding_bytes=s.vocab_size * s.hidden_size * 2.0,
        per_layer_split_elements=split,
        formula=formula,
    )


def gqa_attention_weights(
    *,
    num_layers: int,
    hidden_size: int,
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
    v_head_dim: int,
    vocab_size: int,
    attention: AttentionDtype,
) -> AttentionWeights:
    """A GQA/MHA model's attention weights as SGLang places them under DP attention
    (`models/qwen3_moe.py` `Qwen3MoeAttention`, `models/qwen2.py`): q and o split over attention
    TP, each KV head's k/v on the ranks that hold it (`num_kv_heads // attn_tp` heads per GPU,
    one replicated head when there are fewer heads than ranks), the input embedding over the
    attention-TP group. Other families may differ: an estimate."""
    element = attention.element_bytes
    q = hidden_size * num_heads * head_dim
    o = num_heads * v_head_dim * hidden_size
    kv_head = hidden_size * (head_dim + v_head_dim)
    return AttentionWeights(
        replicated_bytes=0.0,
        split_bytes=(q + o) * num_layers * element,
        embedding_bytes=vocab_size * hidden_size * 2.0,
        per_layer_split_elements=q + o,
        formula=(
            f"per layer: q {hidden_size}×{num_heads}×{head_dim} + o {num_heads}×{v_head_dim}×"
            f"{hidden_size} split over attention TP; k+v {hidden_size}×{head_dim + v_head_dim} "
            f"per KV head ({num_kv_heads} heads, replicated below one per GPU); × {num_layers} "
            f"layers × {element:g} bytes ({attention.why}); input embedding {vocab_size:,}×"
            f"{hidden_size} × 2 bytes"
        ),
        kv_head_bytes=kv_head * num_layers * element,
        num_kv_heads=num_kv_heads,
    )
