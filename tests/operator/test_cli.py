"""`draftgen operator` as a process, the way the chart runs it: watches one namespace, serves
kopf's liveness endpoint and its own metrics, stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx

from .harness import Cluster, example_job, free_port, wait_for


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
        wait_for(
            lambda: httpx.get(f"http://127.0.0.1:{live}/healthz").status_code == 200,
            "kopf's liveness endpoint",
        )
        cluster.apply(example_job(cluster.ns))
        wait_for(lambda: cluster.deployment("kimi-server-0"), "the server Deployment")
        text = wait_for(
            lambda: (
                (t := httpx.get(f"http://127.0.0.1:{metrics}/metrics").text)
                and 'draftgen_operator_jobs{phase="StartingServer"} 1.0' in t
                and t
            ),
            "the operator's metrics",
        )
        assert "draftgen_operator_reconcile_duration_seconds_count" in text
        assert 'draftgen_operator_reconcile_errors_total{kind="api"}' not in text
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out[-3000:]


def test_render_prints_what_the_operator_would_create_or_why_not(tmp_path) -> None:
    from .harness import REPO

    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "draftgen.cli",
            "operator",
            "--render",
            str(REPO / "examples" / "kimi-k2.5.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    import yaml

    kinds = [d["kind"] for d in yaml.safe_load_all(ok.stdout)]
    assert kinds == ["NetworkPolicy", "Service", "Deployment", "ConfigMap", "Job"]
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "draftgen.cli",
            "operator",
            "--render",
            str(REPO / "examples" / "demo.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2
    assert "spec.output.claimName: required in a cluster" in refused.stderr
