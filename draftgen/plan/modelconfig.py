"""What the planner needs from a model's `config.json`: the attention shape that sets the KV
cache's bytes per token, and the weights size from the safetensors files beside it.

MLA (DeepSeek-V3, Kimi-K2/K2.5) caches one latent per token and layer:
`kv_lora_rank + qk_rope_head_dim` elements, the same on every tensor-parallel rank.
MHA/GQA caches a key and a value per KV head; each rank holds its share of the heads.
Multimodal configs nest the language model under `text_config` (Kimi-K2.5).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal

from draftgen.contract.model_location import is_hub

from .attention_weights import AttentionDtype, MLAShapes, attention_dtype

CONFIG_NAME = "config.json"
INDEX_NAME = "model.safetensors.index.json"

# Bytes per KV element, as SGLang stores it (`--kv-cache-dtype`; `auto` follows the model).
KV_DTYPE_BYTES = {"bf16": 2, "fp16": 2, "float16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1}


class ModelConfigError(ValueError):
    """A model config could not be found or read; the message names the file and the fix."""


@dataclass(frozen=True)
class ModelConfig:
    """The fields of a model config that size the KV cache."""

    source: str
    """Where the config was read from."""

    architecture: str
    attention: Literal["mla", "mha"]
    num_layers: int
    dtype: str
    """The checkpoint's dtype (`torch_dtype`/`dtype`)."""

    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    num_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    v_head_dim: int | None = None
    weights_bytes: int | None = None
    """Total safetensors size, when the weights directory was readable."""

    hidden_size: int | None = None
    vocab_size: int | None = None
    attention_dtype: AttentionDtype | None = None
    """How the checkpoint stores the attention projections (from `quantization_config`)."""

    mla_shapes: MLAShapes | None = None
    """An MLA model's attention shapes (sizing the weights DP attention copies); None when the
    config lacks one of them."""

    def kv_element_bytes(self, kv_cache_dtype: str) -> int:
        """Bytes of one cached element for `--kv-cache-dtype`."""
        if kv_cache_dtype == "auto":
            # The model's dtype, except that SGLang runs float32 checkpoints in float16.
            return 2
        try:
            return KV_DTYPE_BYTES[kv_cache_dtype]
        except KeyError:
            raise ModelConfigError(
                f"kvCacheDtype {kv_cache_dtype!r} is not one the planner knows; use one of "
                f"auto, {', '.join(KV_DTYPE_BYTES)}"
            ) from None

    def kv_heads_per_rank(self, tensor_parallel_size: int) -> int:
        """KV heads one rank holds; SGLang replicates them when there are fewer than ranks."""
        assert self.num_kv_heads is not None
        return max(1, self.num_kv_heads // tensor_parallel_size)

    def cell_bytes(self, kv_cache_dtype: str, tensor_parallel_size: int) -> int:
        """KV bytes one token takes on one rank (SGLang's `cell_size`)."""
        element = self.kv_element_bytes(kv_cache_dtype)
        if self.attention == "mla":
            assert self.kv_lora_rank is not None and self.qk_rope_head_dim is not None
            return (self.kv_lora_rank + self.qk_rope_head_dim) * self.num_layers * element
        assert self.head_dim is not None
        v_dim = self.v_head_dim or self.head_dim
        heads = self.kv_heads_per_rank(tensor_parallel_size)
        return heads * (self.head_dim + v_dim) * self.num_layers * element

    def describe(self) -> str:
        if self.attention == "mla":
            return (
                f"{self.architecture}: MLA, {self.num_layers} layers, kv_lora_rank "
                f"{self.kv_lora_rank} + qk_rope_head_dim {self.qk_rope_head_dim}"
            )
        kind = "GQA" if self.num_kv_heads != self.num_heads else "MHA"
        return (
            f"{self.architecture}: {kind}, {self.num_layers} layers, {self.num_kv_heads} KV "
            f"heads × head_dim {self.head_dim}"
        )


def _text_config(data: dict[str, Any]) -> dict[str, Any]:
    """The language model's part of a config: nested `text_config` (or `language_config`) as in
    multimodal models, else the config itself. Top-level keys fill what the nested one lacks."""
    for key in ("text_config", "language_config", "llm_config"):
        nested = data.get(key)
        if isinstance(nested, dict) and "num_hidden_layers" in nested:
            return {**{k: v for k, v in data.items() if k != key}, **nested}
    return data


def _int(cfg: dict[str, Any], key: str, source: str) -> int:
    value = cfg.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ModelConfigError(
            f"{source}: `{key}` is {value!r}; the planner needs a positive integer there to size "
            "the KV cache (give the language model's config, or pass --model-config)"
        )
    return value


def parse_model_config(data: Any, source: str = CONFIG_NAME) -> ModelConfig:
    """Read the KV-relevant fields of a decoded `config.json`."""
    if not isinstance(data, dict):
        raise ModelConfigError(f"{source}: expected a JSON object, got {type(data).__name__}")
    cfg = _text_config(data)
    architectures = (
        data.get("architectures") or cfg.get("architectures") or [cfg.get("model_type", "unknown")]
    )
    architecture = str(architectures[0])
    num_layers = _int(cfg, "num_hidden_layers", source)
    dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or data.get("torch_dtype") or "bfloat16")
    # The fields every attention kind has; each branch adds its own.
    config = partial(
        ModelConfig, source=source, architecture=architecture, num_layers=num_layers, dtype=dtype
    )
    if cfg.get("kv_lora_rank"):
        return config(
            attention="mla",
            mla_shapes=_mla_shapes(cfg, num_layers, dtype),
            kv_lora_rank=_int(cfg, "kv_lora_rank", source),
            qk_rope_head_dim=_int(cfg, "qk_rope_head_dim", source),
            num_heads=_int(cfg, "num_attention_heads", source)
            if cfg.get("num_attention_heads")
            else None,
        )
    heads = _int(cfg, "num_attention_heads", source)
    kv_heads = cfg.get("num_key_value_heads") or heads
    head_dim = cfg.get("head_dim") or _int(cfg, "hidden_size", source) // heads
    size = cfg.get("hidden_size")
    vocab = cfg.get("vocab_size")
    return config(
        attention="mha",
        hidden_size=size if isinstance(size, int) and size > 0 else None,
        vocab_size=vocab if isinstance(vocab, int) and vocab > 0 else None,
        attention_dtype=attention_dtype(cfg, dtype),
        num_heads=heads,
        num_kv_heads=int(kv_heads),
        head_dim=int(head_dim),
        v_head_dim=int(cfg.get("v_head_dim") or head_dim),
    )


def _mla_shapes(cfg: dict[str, Any], num_layers: int, dtype: str) -> MLAShapes | None:
    """The shapes `attention_weights` needs, or None when one is missing (the planner then
    leaves DP attention unplanned and says so)."""
    keys = ("hidden_size", "num_attention_heads", "kv_lora_rank", "qk_nope_head_dim",
            "qk_rope_head_dim", "v_head_dim", "vocab_size")  # fmt: skip
    if any(not isinstance(cfg.get(k), int) or cfg[k] <= 0 for k in keys):
        return None
    q_lora = cfg.get("q_lora_rank")
    return MLAShapes(
        num_layers=num_layers,
        hidden_size=cfg["hidden_size"],
        num_heads=cfg["num_attention_heads"],
        q_lora_rank=q_lora if isinstance(q_lora, int) and q_lora > 0 else None,
        kv_lora_rank=cfg["kv_lora_rank"],
        qk_nope_head_dim=cfg["qk_nope_head_dim"],
        qk_rope_head_dim=cfg["qk_rope_head_dim"],
        v_head_dim=cfg["v_head_dim"],
        vocab_size=cfg["vocab_size"],
        attention=attention_dtype(cfg, dtype),
    )


def weights_bytes(directory: Path) -> int | None:
    """Total weights size: `metadata.total_size` of the safetensors index, else the sum of the
    `*.safetensors` files; None when there are none."""
    index = directory / INDEX_NAME
    if index.is_file():
        try:
            total = (
                json.loads(index.read_text(encoding="utf-8")).get("metadata", {}).get("total_size")
            )
        except (OSError, ValueError):
            total = None
        if isinstance(total, int) and total > 0:
            return total
    files = sorted(directory.glob("*.safetensors"))
    return sum(f.stat().st_size for f in files) if files else None


def load_model_config(path: str | Path) -> ModelConfig:
    """Read a `config.json`, given as the file or as the weights directory that holds it."""
    path = Path(path)
    file = path / CONFIG_NAME if path.is_dir() else path
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as err:
        raise ModelConfigError(
            f"{file}: cannot read the model config ({err.strerror}); set spec.model.configPath "
            "or pass --model-config to a config.json"
        ) from None
    try:
        data = json.loads(text)
    except ValueError as err:
        raise ModelConfigError(f"{file}: not valid JSON ({err})") from None
    config = parse_model_config(data, str(file))
    return replace(config, weights_bytes=weights_bytes(file.parent))


def config_location(config_path: str | None, weights: str, base_dir: Path | None) -> Path | None:
    """Where a job's model config is on this machine: `configPath`, else `config.json` in the
    weights, each relative to `base_dir` (the job file's directory). None for hub weights."""
    base = base_dir or Path.cwd()
    if config_path:
        return (base / config_path).resolve()
    if is_hub(weights):
        return None
    return (base / weights).resolve()
