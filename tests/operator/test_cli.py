"""`draftgen operator` as a process, the way the chart runs it: watches one namespace, serves
kopf's liveness endpoint and its own metrics, stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import yaml

from .harness import REPO, Cluster, example_job, free_port, wait_for
from .probes import operator_metrics, wait_live


def test_operator_command_serves_liveness_and_metrics_and_handles_jobs(cluster: Cluster) -> None:
    live, metrics = free_port(), free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "draftgen.cli",
            "operator",
            "--namespace",
            cluster.ns,
            "--standalone",
            "--liveness",
            f"http://127.0.0.1:{live}/healthz",
            "--metrics-port",
            str(metrics),
        ],
        env={**os.environ},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_live(live)
        cluster.apply(example_job(cluster.ns))
        wait_for(lambda: cluster.deployment("kimi-server-0"), "the server Deployment")
        text = operator_metrics(metrics, 'draftgen_operator_jobs{phase="StartingServer"} 1.0')
        assert "draftgen_operator_reconcile_duration_seconds_count" in text
        # Each job's phase, for alerts on a failed or stuck job (issue 30, item 12).
        assert (
            f'draftgen_operator_job_phase{{generationjob="kimi",namespace="{cluster.ns}",'
            'phase="StartingServer"} 1.0'
        ) in text
        assert 'draftgen_operator_reconcile_errors_total{kind="api"}' not in text
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out[-3000:]


def _render(example: str) -> subprocess.CompletedProcess:
    """`draftgen operator --render` of one of examples/."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "draftgen.cli",
            "operator",
            "--render",
            str(REPO / "examples" / example),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_render_prints_what_the_operator_would_create_or_why_not(tmp_path) -> None:
    ok = _render("kimi-k2.5.yaml")
    assert ok.returncode == 0, ok.stderr
    kinds = [d["kind"] for d in yaml.safe_load_all(ok.stdout)]
    assert kinds == ["NetworkPolicy", "Service", "Deployment", "ConfigMap", "Job"]
    refused = _render("demo.yaml")
    assert refused.returncode == 2
    assert "spec.output.claimName: required in a cluster" in refused.stderr
