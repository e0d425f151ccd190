"""Model configs: MLA (nested as in Kimi-K2.5) and MHA/GQA, found as a file or a directory."""

from __future__ import annotations

import json

import pytest

from draftgen.plan.modelconfig import (
    ModelConfigError,
    load_model_config,
    parse_model_config,
    weights_bytes,
)

from .conftest import LLAMA_8B


def test_kimi_nested_text_config_is_mla(kimi_config):
    assert kimi_config.attention == "mla"
    assert kimi_config.num_layers == 61
    assert (kimi_config.kv_lora_rank, kimi_config.qk_rope_head_dim) == (512, 64)
    # (512 + 64) × 61 × 2 bytes, the same on every rank whatever the tensor parallelism.
    assert kimi_config.cell_bytes("bf16", 8) == kimi_config.cell_bytes("bf16", 1) == 70_272
    assert kimi_config.cell_bytes("fp8_e4m3", 8) == 35_136


def test_gqa_heads_are_split_over_ranks_and_replicated_below_one():
    cfg = parse_model_config(LLAMA_8B)
    assert cfg.attention == "mha" and cfg.head_dim == 128
    assert cfg.cell_bytes("bf16", 1) == 8 * 256 * 32 * 2
    assert cfg.cell_bytes("bf16", 8) == 1 * 256 * 32 * 2
    # 8 KV heads over 16 ranks: each rank still holds one head (SGLang replicates).
    assert cfg.cell_bytes("bf16", 16) == cfg.cell_bytes("bf16", 8)
    assert "GQA" in cfg.describe()


def test_mha_without_kv_heads_or_head_dim_uses_hidden_over_heads():
    cfg = parse_model_config(
        {
            "model_type": "gpt",
            "hidden_size": 768,
            "num_hidden_layers": 12,
            "num_attention_heads": 12,
            "torch_dtype": "float32",
        }
    )
    assert (cfg.num_kv_heads, cfg.head_dim) == (12, 64)
    # SGLang runs a float32 checkpoint in float16, so `auto` is 2 bytes (seen in its log).
    assert cfg.cell_bytes("auto", 1) == 12 * 128 * 12 * 2
    assert "MHA" in cfg.describe()


def test_explicit_head_dim_wins(tmp_path):
    cfg = parse_model_config({**LLAMA_8B, "head_dim": 64})
    assert cfg.cell_bytes("bf16", 1) == 8 * 128 * 32 * 2


def test_config_found_in_the_weights_directory_with_its_size(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_8B))
    (tmp_path / "model-00001-of-00002.safetensors").write_bytes(b"\0" * 1000)
    (tmp_path / "model-00002-of-00002.safetensors").write_bytes(b"\0" * 500)
    cfg = load_model_config(tmp_path)
    assert cfg.num_layers == 32
    assert cfg.weights_bytes == 1500  # no index: the files' sizes


def test_index_total_size_is_preferred(tmp_path):
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 123456}})
    )
    (tmp_path / "a.safetensors").write_bytes(b"\0" * 10)
    assert weights_bytes(tmp_path) == 123456


def test_missing_config_names_the_fix(tmp_path):
    with pytest.raises(ModelConfigError, match="configPath|--model-config"):
        load_model_config(tmp_path / "nowhere")


def test_config_without_layers_names_the_field():
    with pytest.raises(ModelConfigError, match="num_hidden_layers"):
        parse_model_config({"hidden_size": 4096}, "x/config.json")


@pytest.mark.parametrize("name", ["tiny-chatml", "tiny-kimi"])
def test_the_tiny_test_models_are_gqa(repo, name):
    """The random-weight models the real CPU server runs (built by `make models`)."""
    path = repo / ".cache" / "models" / name
    if not (path / "config.json").is_file():
        pytest.skip(f"{path} not built (make models)")
    cfg = load_model_config(path)
    # 4 heads, 2 KV heads, hidden 64 → head_dim 16; 2 layers; float32 runs as float16.
    assert (cfg.attention, cfg.num_kv_heads, cfg.head_dim, cfg.num_layers) == ("mha", 2, 16, 2)
    assert cfg.cell_bytes("auto", 1) == 2 * (16 + 16) * 2 * 2
    assert cfg.weights_bytes == (path / "model.safetensors").stat().st_size
