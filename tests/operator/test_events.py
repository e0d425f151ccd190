"""Kubernetes Events: `kubectl describe gj` lists every phase change and failure reason.

kopf posts log records as Events only with `settings.posting.loggers`, so nothing appeared
before the reconcile posted its own; asserted on what the emulator received."""

from __future__ import annotations

from draftgen.controller.events import EventLimiter, JobEvent, job_events

from .harness import Cluster, example_job, wait_for


def _posted(cluster: Cluster, name: str) -> list[tuple[str, str]]:
    return [
        (r["data"]["type"], r["data"]["reason"])
        for r in cluster.emu.requests()
        if r["plural"] == "events"
        and r["method"] == "POST"
        and r["data"]["involvedObject"]["kind"] == "GenerationJob"
        and r["data"]["involvedObject"]["name"] == name
    ]


def test_phase_changes_and_failures_are_posted_as_events(cluster: Cluster, operator) -> None:
    cluster.apply(example_job(cluster.ns))
    wait_for(lambda: cluster.deployment("kimi-server-0"), "the server Deployment")
    cluster.server_ready("kimi")
    wait_for(lambda: cluster.batch_job("kimi-generator"), "the generator Job")
    cluster.finish_generator("kimi", succeeded=False)
    cluster.wait_phase("kimi", "Failed")
    want = [
        ("Normal", "StartingServer"),
        ("Normal", "Generating"),
        ("Warning", "Failed"),
        ("Warning", "GeneratorFailed"),
    ]
    got = wait_for(
        lambda: (p := _posted(cluster, "kimi")) and all(w in p for w in want) and p,
        "the Events of every phase change",
    )
    event = next(
        r["data"]
        for r in cluster.emu.requests()
        if r["plural"] == "events"
        and r["method"] == "POST"
        and r["data"]["reason"] == "GeneratorFailed"
    )
    ref = event["involvedObject"]
    assert ref["apiVersion"] == "draftgen.io/v1alpha1" and ref["namespace"] == cluster.ns
    assert ref["uid"] == cluster.job("kimi")["metadata"]["uid"]
    assert "backoff limit" in event["message"]
    assert got.count(("Warning", "GeneratorFailed")) == 1  # not again on every poll


def test_a_rejected_spec_is_an_event(cluster: Cluster, operator) -> None:
    bad = example_job(cluster.ns, name="bad")
    bad["spec"]["server"]["hierarchicalCache"]["sizeGBPerRank"] = 300
    cluster.apply(bad)
    wait_for(lambda: ("Warning", "InvalidSpec") in _posted(cluster, "bad"), "an InvalidSpec Event")


def test_job_events_name_the_phase_change_and_each_new_failure_reason() -> None:
    old = {"phase": "Generating", "conditions": []}
    new = {
        "phase": "Failed",
        "message": "generator failed",
        "conditions": [
            {"type": "Generating", "status": "False", "reason": "GeneratorFailed", "message": "m"},
            {"type": "Failed", "status": "True", "reason": "GeneratorFailed", "message": "m"},
        ],
    }
    assert job_events(old, new) == [
        JobEvent("Warning", "Failed", "phase Generating → Failed: generator failed", once=False),
        JobEvent("Warning", "GeneratorFailed", "m"),
    ]
    assert job_events(new, new) == []


def test_the_limiter_drops_repeats_and_bursts() -> None:
    now = [0.0]
    limiter = EventLimiter(burst=3, refill_seconds=10, repeat_seconds=60, clock=lambda: now[0])
    crash = JobEvent("Warning", "ReconcileError", "403")
    assert limiter.admit("a", [crash]) == [crash]
    assert limiter.admit("a", [crash]) == []  # the same failure on the next poll
    phases = [JobEvent("Normal", p, p, once=False) for p in ("A", "B", "C")]
    assert limiter.admit("a", phases) == phases[:2]  # burst of 3, one spent on `crash`
    assert limiter.admit("b", [crash]) == [crash]  # per job
    now[0] = 61.0
    assert limiter.admit("a", [crash]) == [crash]  # refilled, and no longer a repeat
