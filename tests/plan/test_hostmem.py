"""Hierarchical cache is per rank (field facts, lesson 6): the node holds size × ranks."""

from __future__ import annotations

import pytest

from draftgen.spec import SpecError, parse_spec
from draftgen.spec.hostmem import check_host_memory


def test_48_gb_per_rank_on_a_449_gb_host_is_accepted():
    check = check_host_memory(48, 8, 449, model_load_gb=40, margin_gb=16)
    assert check.ok and check.problem is None
    assert check.total_gb == 384
    assert check.max_safe_gb_per_rank == 49


def test_300_gb_per_rank_is_rejected_with_the_total_spelled_out():
    check = check_host_memory(300, 8, 449, model_load_gb=40, margin_gb=16)
    assert not check.ok
    assert "300 GB per rank × 8 ranks = 2400 GB > 449 GB host" in check.problem
    assert "40 GB model loading − 16 GB margin = 393 GB" in check.problem
    assert "at most 49" in check.problem


def test_the_spec_refuses_it_with_the_same_rule():
    spec = {
        "model": {"weights": "/m"},
        "datasets": [{"name": "a", "source": "a.jsonl", "format": "prompt"}],
        "server": {
            "hostMemoryGB": 449,
            "hierarchicalCache": {"enabled": True, "sizeGBPerRank": 300},
        },
    }
    with pytest.raises(SpecError) as err:
        parse_spec(spec)
    assert check_host_memory(300, 8, 449, 40, 16).problem in str(err.value)
