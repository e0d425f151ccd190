"""`draftgen operator` inside the image, as the chart runs it, against the test Kubernetes emulator
(tests/operator/emulator/) on the host network: it starts, serves kopf's liveness probe and its
metrics, creates a GenerationJob's server Deployment, and stops cleanly on SIGTERM."""

from __future__ import annotations

import copy
import subprocess
import time

import httpx
import pytest
import yaml

from draftgen.testing.sglang import free_port

from .conftest import DOCKER, IN, REPO

# The first test also builds the image (minutes with the vfs storage driver, a cold cache).
pytestmark = [pytest.mark.image, pytest.mark.timeout(1800)]

GJ = "/apis/draftgen.io/v1alpha1"
BATCH = "/apis/batch/v1"
NS = "drafters"
# As tests/operator/conftest.py sets them for its in-process runs.
OPERATOR_ENV = {
    "DRAFTGEN_OPERATOR_POLL_INTERVAL_SECONDS": "0.3",
    "DRAFTGEN_OPERATOR_HTTP_TIMEOUT_SECONDS": "1",
    "DRAFTGEN_OPERATOR_GENERATOR_IMAGE": "registry.example/draftgen:test",
}


def _wait(fn, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except Exception as err:  # not up yet
            last = err
        if last and not isinstance(last, Exception):
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}; last value: {last!r}")


@pytest.fixture
def emulator(container):
    from tests.operator.emulator import EmulatorThread

    workdir = container.inputs / "kube"
    workdir.mkdir(exist_ok=True)
    emu = EmulatorThread(workdir, kubeconfig=workdir / "kubeconfig").start()
    try:
        yield emu
    finally:
        emu.stop()


def test_operator_starts_in_the_container_and_reconciles(container, emulator):
    live, metrics = free_port(), free_port()
    # HOME as the chart leaves it for the operator: the image's, on the read-only root.
    env = {
        **OPERATOR_ENV,
        "HOME": "/home/draftgen",
        "KUBECONFIG": f"{IN}/kube/kubeconfig",
        "DRAFTGEN_OPERATOR_METRICS_PORT": str(metrics),
    }
    flags = [f for k, v in env.items() for f in ("-e", f"{k}={v}")]
    # The operator in the background of a shell, so that a second exec can signal it.
    script = (
        f"draftgen operator --namespace {NS} --standalone "
        f"--liveness http://127.0.0.1:{live}/healthz --metrics-port {metrics} & "
        "echo $! > /tmp/operator.pid; wait $!"
    )
    proc = subprocess.Popen(
        [DOCKER, "exec", *flags, container.name, "sh", "-c", script],
        env=container.engine.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        _wait(
            lambda: httpx.get(f"http://127.0.0.1:{live}/healthz").status_code == 200,
            "kopf's liveness endpoint",
        )
        job = yaml.safe_load((REPO / "examples" / "kimi-k2.5.yaml").read_text())
        job = copy.deepcopy(job)
        job["metadata"] = {"name": "kimi", "namespace": NS}
        emulator.create(GJ, "generationjobs", NS, job)
        # With the default settings the first child is the preflight Job (the server follows
        # once it passed: tests/operator/test_preflight_operator.py).
        _wait(lambda: emulator.get(BATCH, "jobs", NS, "kimi-preflight"), "the preflight Job")
        text = _wait(
            lambda: (
                (t := httpx.get(f"http://127.0.0.1:{metrics}/metrics").text)
                and "draftgen_operator_jobs" in t
                and t
            ),
            "the operator's metrics",
        )
        assert 'draftgen_operator_reconcile_errors_total{kind="api"}' not in text
    finally:
        container.exec("sh", "-c", "kill -TERM $(cat /tmp/operator.pid)", check=False)
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-3000:]
