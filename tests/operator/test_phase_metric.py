"""`draftgen_operator_job_phase`: one series per GenerationJob, 1 for its current phase, so
"a job failed" and "a job is stuck Queued or in Preflight" can alert per job (issue 30, item 12);
the series of a job's earlier phase goes, and a deleted job leaves none."""

from __future__ import annotations

from prometheus_client import generate_latest

from draftgen.controller import metrics


def _series(name: str) -> list[str]:
    text = generate_latest(metrics.REGISTRY).decode()
    return [
        line
        for line in text.splitlines()
        if line.startswith("draftgen_operator_job_phase{") and f'generationjob="{name}"' in line
    ]


def test_one_series_per_job_at_its_current_phase() -> None:
    metrics.record_phase("team-a", "phase-metric-a", "Preflight")
    metrics.record_phase("team-b", "phase-metric-b", "Generating")
    assert _series("phase-metric-a") == [
        'draftgen_operator_job_phase{generationjob="phase-metric-a",namespace="team-a",'
        'phase="Preflight"} 1.0'
    ]
    metrics.record_phase("team-a", "phase-metric-a", "Failed")
    assert _series("phase-metric-a") == [
        'draftgen_operator_job_phase{generationjob="phase-metric-a",namespace="team-a",'
        'phase="Failed"} 1.0'
    ]
    assert len(_series("phase-metric-b")) == 1
    metrics.record_phase("team-a", "phase-metric-a", None)
    metrics.record_phase("team-b", "phase-metric-b", None)
    assert _series("phase-metric-a") == _series("phase-metric-b") == []
