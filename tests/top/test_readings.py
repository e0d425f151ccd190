"""Pages and documents → readings: the generator's real metrics page (its own registry), an
SGLang page as SGLang writes it, a job manifest from the ledger's own manifest."""

from __future__ import annotations

import time

from prometheus_client import generate_latest

from draftgen.generator.telemetry.metrics import GeneratorMetrics
from draftgen.output.ledger import Ledger
from draftgen.spec import Budget as SpecBudget
from draftgen.top import readings
from draftgen.top.model import Budget


def _ledger(name: str, budget: SpecBudget, records: list[tuple[int, int, str]]) -> Ledger:
    led = Ledger(name, budget)
    for prompt, completion, reason in records:
        led.add(prompt, completion, reason)
    return led


def test_generator_page_in_spec_order_with_truncation_and_rejects():
    m = GeneratorMetrics()
    zeta = _ledger("zeta", SpecBudget(completion_tokens=1000), [(10, 12, "length"), (9, 5, "stop")])
    zeta.add_reject("prompt_too_long")
    alpha = _ledger("alpha", SpecBudget(max_samples=4), [(3, 7, "stop")])
    for led in (zeta, alpha):  # spec order: zeta first
        m.start_from(led)
    m.requests_in_flight.labels("http://s0:30000").set(3)
    m.completion_tokens_per_second.set(42.5)
    page = readings.parse_generator_page(generate_latest(m.registry).decode())
    assert [d.name for d in page.datasets] == ["zeta", "alpha"]
    z = page.datasets[0]
    assert (z.samples, z.prompt_tokens, z.completion_tokens, z.truncated, z.rejects) == (
        2,
        19,
        17,
        1,
        1,
    )
    assert z.budget == Budget(completion_tokens=1000)
    assert page.servers == ["http://s0:30000"] and page.throughput == 42.5
    assert page.series > 0


def test_a_page_without_generator_series_counts_none():
    page = readings.parse_generator_page("# HELP x y\n# TYPE x gauge\nx 1\n")
    assert page.series == 0 and page.datasets == []


def test_sglang_page_keeps_the_largest_rank():
    text = (
        "# TYPE sglang:token_usage gauge\n"
        'sglang:token_usage{tp_rank="0"} 0.5\n'
        'sglang:token_usage{tp_rank="1"} 0.93\n'
        "# TYPE sglang:num_queue_reqs gauge\n"
        'sglang:num_queue_reqs{tp_rank="0"} 7\n'
        "# TYPE sglang:num_running_reqs gauge\n"
        'sglang:num_running_reqs{tp_rank="0"} 40\n'
    )
    r = readings.parse_server_page(text, "s0")
    assert (r.token_usage, r.queued, r.running) == (0.93, 7, 40)


def test_job_manifest_from_the_ledgers_manifest():
    led = _ledger(
        "code", SpecBudget(completion_tokens=50, total_tokens=500), [(40, 30, "length")] * 2
    )
    led.add_reject("malformed_json")
    doc = {
        "datasets": {"code": led.manifest().to_json()},
        "throughput_tokens_per_second": 12.0,
        "eta_seconds": None,
        "done": True,
        "updated_at": time.time(),
    }
    got = readings.parse_job_manifest(doc)
    d = got.datasets[0]
    assert (d.samples, d.completion_tokens, d.prompt_tokens, d.truncated, d.rejects) == (
        2,
        60,
        80,
        2,
        1,
    )
    assert d.budget == Budget(completion_tokens=50, total_tokens=500) and d.done
    assert got.throughput == 12.0 and got.eta_seconds is None and got.job_done is True


def test_spec_order_and_whole_budgets_from_the_generationjob():
    job = {
        "spec": {
            "datasets": [
                {"name": "b", "budget": {"maxSamples": 9}},
                {"name": "a", "budget": {"completionTokens": 5}},
            ]
        },
        "status": {"datasets": [{"name": "a", "samples": 1, "completionTokens": 4}]},
    }
    merged = readings.merge_spec(readings.status_datasets(job), readings.spec_budgets(job))
    assert [(d.name, d.samples, d.budget) for d in merged] == [
        ("b", 0, Budget(max_samples=9)),
        ("a", 1, Budget(completion_tokens=5)),
    ]
    assert merged[1].completion_tokens == 4 and merged[1].truncated is None


def test_the_manifests_rfc3339_updated_at_is_read_as_a_moment():
    """The generator writes `updated_at` as RFC 3339; read as a float it was always None, so a
    stale manifest was never noticed."""
    doc = {"datasets": {}, "done": False, "updated_at": "2026-12-01T14:08:00Z"}
    assert readings.parse_job_manifest(doc).updated_at == 1796134080.0
    assert readings.parse_job_manifest({**doc, "updated_at": 12.5}).updated_at == 12.5
    assert readings.parse_job_manifest({**doc, "updated_at": "yesterday"}).updated_at is None
