"""Decodes that fit in the KV pool, and the throughput ceiling they set (field facts, lesson 4)."""

from __future__ import annotations

from draftgen.plan.concurrency import (
    DatasetLengths,
    concurrent_decodes,
    explain_throughput,
    mean_sequence_tokens,
    throughput_ceiling,
)


def test_about_forty_decodes_at_4000_token_sequences_at_088():
    decodes = concurrent_decodes(159_277, 4_000)
    assert decodes in (39, 40)
    # The same sequences at 0.85 fit a quarter fewer: the fraction matters.
    assert concurrent_decodes(116_171, 4_000) == 29


def test_forty_decodes_at_17_tokens_per_second_is_680():
    assert throughput_ceiling(40, 17.0) == 680.0


def test_observed_680_is_explained_as_the_kv_bound():
    verdict = explain_throughput(680.0, throughput_ceiling(40, 17.0), 40, 17.0)
    assert verdict.kv_bound
    assert "40 decodes × 17 tok/s = 680 tok/s" in verdict.message
    assert "more client concurrency only lengthens the queue" in verdict.message


def test_a_rate_far_below_the_bound_is_not_blamed_on_kv():
    verdict = explain_throughput(200.0, 680.0, 40, 17.0)
    assert not verdict.kv_bound
    assert "in flight" in verdict.message


def test_max_running_requests_caps_decodes():
    assert concurrent_decodes(159_277, 1_000, max_running_requests=64) == 64


def test_mixed_datasets_weight_by_expected_samples():
    short = DatasetLengths("short", 500, 500, "dataset")  # 1,000-token sequences
    long = DatasetLengths("long", 4_000, 3_793, "dataset")  # 7,793-token sequences
    # Equal token budgets: the short set has ~7.6× the requests, so it dominates the mix.
    samples = {"short": 10_000_000 / 500, "long": 10_000_000 / 3_793}
    mean = mean_sequence_tokens([short, long], samples)
    assert 1_000 < mean < 2_000
    assert mean_sequence_tokens([short, long]) == (1_000 + 7_793) / 2
    assert mean_sequence_tokens([DatasetLengths("x", None, 100, "job")]) is None
