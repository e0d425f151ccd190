"""Memory left for prefill after the KV pool and CUDA graphs (field facts, lesson 5)."""

from __future__ import annotations

import pytest

from draftgen.plan.headroom import headroom
from draftgen.plan.kvcache import kv_capacity, parse_start_log

from .conftest import KIMI_START_LOG


def _room(config, memory, fraction, **kw):
    cap = kv_capacity(memory, fraction, config.cell_bytes("bf16", 8), "bf16")
    return headroom(memory, cap, **kw)


def test_093_warns_and_088_does_not(kimi_config, kimi_memory):
    at_093 = _room(kimi_config, kimi_memory, 0.93)
    assert at_093.thin
    assert at_093.after_graphs_gib < 1.5  # 0.82 GB was seen
    assert "0.93" in at_093.warning and "prefill" in at_093.warning
    at_088 = _room(kimi_config, kimi_memory, 0.88)
    assert not at_088.thin and at_088.warning is None
    assert not _room(kimi_config, kimi_memory, 0.90).thin


def test_pool_leaves_the_reserved_fraction(kimi_config, kimi_memory):
    room = _room(kimi_config, kimi_memory, 0.93)
    assert room.after_pool_gib == pytest.approx(94.04 * 0.07, abs=0.01)


def test_graph_memory_seen_in_a_log_replaces_the_estimate(kimi_config):
    memory = parse_start_log(KIMI_START_LOG).profile()
    room = _room(kimi_config, memory, 0.93)
    assert room.cuda_graph_source == "measured"
    assert room.after_graphs_gib == pytest.approx(94.04 * 0.07 - 5.76, abs=0.02)
    assert room.thin


def test_a_given_graph_size_and_threshold_win(kimi_config, kimi_memory):
    room = _room(kimi_config, kimi_memory, 0.93, cuda_graph_gib=1.0, min_headroom_gib=1.0)
    assert room.cuda_graph_source == "given" and not room.thin
