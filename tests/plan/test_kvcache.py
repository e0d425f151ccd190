"""KV capacity by SGLang's rule reproduces what the real Kimi-K2.5 server reported."""

from __future__ import annotations

import json

import pytest

from draftgen.plan.kvcache import (
    GiB,
    MemoryInputError,
    estimated,
    kv_capacity,
    measured,
    parse_start_log,
    relative_error,
)
from draftgen.plan.modelconfig import load_model_config

from .conftest import KIMI_START_LOG, LLAMA_8B

# SGLang reported these with --tp 8, bf16 KV, after 94.04 GiB free before and 21.71 after loading.
OBSERVED = [(0.85, 116_171), (0.88, 159_277)]


@pytest.mark.parametrize("mem_fraction, observed", OBSERVED)
def test_kimi_capacity_within_half_a_percent(kimi_config, kimi_memory, mem_fraction, observed):
    cell = kimi_config.cell_bytes("bf16", tensor_parallel_size=8)
    cap = kv_capacity(kimi_memory, mem_fraction, cell, "bf16")
    assert relative_error(cap.tokens, observed) < 0.005, cap


def test_one_start_predicts_another_fraction(kimi_config):
    """From the log of the 0.88 start alone, the pool at 0.85 is predicted without a restart."""
    log = parse_start_log(KIMI_START_LOG)
    cell = kimi_config.cell_bytes("bf16", 8)
    predicted = kv_capacity(log.profile(), 0.85, cell, "bf16").tokens
    assert relative_error(predicted, 116_171) < 0.005


def test_auto_dtype_follows_the_model(kimi_config):
    assert kimi_config.cell_bytes("auto", 8) == kimi_config.cell_bytes("bf16", 8) == 70_272


def test_fp8_kv_roughly_doubles_tokens(kimi_config, kimi_memory):
    bf16 = kv_capacity(kimi_memory, 0.88, kimi_config.cell_bytes("bf16", 8), "bf16").tokens
    fp8 = kv_capacity(kimi_memory, 0.88, kimi_config.cell_bytes("fp8_e4m3", 8), "fp8_e4m3").tokens
    assert 1.95 < fp8 / bf16 < 2.05


def test_max_total_tokens_caps_the_pool(kimi_config, kimi_memory):
    cap = kv_capacity(
        kimi_memory, 0.88, kimi_config.cell_bytes("bf16", 8), "bf16", max_total_tokens=4096
    )
    assert cap.tokens == 4096 and cap.capped_by_max_total_tokens
    assert cap.uncapped_tokens > 150_000


def test_fraction_too_low_leaves_no_pool(kimi_config, kimi_memory):
    # 72.33 of 94.04 GiB are weights: below 1 − 21.71/94.04 = 0.769 nothing is left.
    assert kimi_memory.min_mem_fraction_static == pytest.approx(0.7691, abs=1e-3)
    cap = kv_capacity(kimi_memory, 0.75, kimi_config.cell_bytes("bf16", 8), "bf16")
    assert cap.tokens == 0 and not cap.fits


def test_fraction_needed_for_a_pool_size(kimi_config, kimi_memory):
    cell = kimi_config.cell_bytes("bf16", 8)
    needed = kimi_memory.mem_fraction_for_tokens(159_277, cell)
    assert needed == pytest.approx(0.88, abs=0.0005)


def test_swapped_figures_are_refused():
    with pytest.raises(MemoryInputError, match="swapped"):
        measured(21.71, 94.04)


def test_log_gives_the_minimum_over_ranks_and_the_start_it_describes():
    log = parse_start_log(KIMI_START_LOG)
    assert log.free_before_load_gib == 94.04
    assert log.free_after_load_gib == 21.71
    assert log.ranks == 3
    assert log.max_total_num_tokens == 159_277
    assert log.mem_fraction_static == 0.88
    assert log.kv_cache_dtype == "bf16"
    assert log.tp_size == 8
    # Everything after the pool (graphs and the like): 11.28 − 5.52.
    assert log.cuda_graph_gib == pytest.approx(5.76, abs=0.01)


def test_log_of_the_installed_sglang_format_is_read():
    """sglang 0.5.23 words the weight-end line differently; the free memory is still found."""
    text = (
        "[2026-03-02 09:00:40 TP0] Load weight begin. avail mem=94.04 GB\n"
        "[2026-03-02 09:19:12 TP0] Load weight end. elapsed=1110.21 s, "
        "type=DeepseekV3ForCausalLM, quant=compressed-tensors, avail mem=21.71 GB, "
        "mem usage=72.33 GB.\n"
        "[2026-03-02 09:19:14 TP0] KV Cache is allocated. dtype: torch.bfloat16, "
        "#tokens: 159277, KV size: 10.42 GB\n"
        "[2026-03-02 09:20:07 TP0] Capture decode CUDA graph end. elapsed=52.37 s, "
        "mem usage=5.49 GB, avail mem=5.61 GB.\n"
    )
    log = parse_start_log(text)
    assert (log.free_before_load_gib, log.free_after_load_gib) == (94.04, 21.71)
    assert log.max_total_num_tokens == 159_277
    assert log.cuda_graph_gib == pytest.approx(5.49)


def test_log_without_the_memory_lines_says_what_to_give():
    with pytest.raises(MemoryInputError, match="Load weight begin.*free-before-load-gib"):
        parse_start_log("[TP0] Init torch distributed begin.\n")


def test_estimate_from_gpu_memory_and_safetensors_index(tmp_path):
    """A Llama-style GQA model of 16 GB on one 24 GiB GPU: 16e9 bytes = 14.90 GiB of weights."""
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_8B))
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 16_000_000_000}, "weight_map": {}})
    )
    model = load_model_config(tmp_path)
    assert model.weights_bytes == 16_000_000_000
    profile = estimated(
        24.0,
        model.weights_bytes,
        tensor_parallel_size=1,
        cuda_context_gib=0.5,
        load_overhead_gib=0.5,
    )
    assert profile.free_before_load_gib == 23.5
    assert profile.free_after_load_gib == pytest.approx(23.5 - 16e9 / GiB - 0.5)
    cell = model.cell_bytes("bf16", 1)  # 8 KV heads × (128 + 128) × 32 layers × 2 bytes
    assert cell == 131_072
    cap = kv_capacity(profile, 0.9, cell, "bf16")
    expected_rest = profile.free_after_load_gib - 23.5 * 0.1
    assert cap.tokens == int(expected_rest * GiB // cell)


def test_weights_that_do_not_fit_are_refused():
    with pytest.raises(MemoryInputError, match="do not fit"):
        estimated(24.0, 60_000_000_000, 1, 0.5, 0.5)
