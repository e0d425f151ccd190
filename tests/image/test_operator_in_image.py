"""`draftgen operator` inside the image, as the chart runs it, against the test Kubernetes emulator
(tests/operator/emulator/) on the host network: it starts, serves kopf's liveness probe and its
metrics, creates a GenerationJob's server Deployment, and stops cleanly on SIGTERM."""

from __future__ import annotations

import copy
import subprocess

import pytest
import yaml

from draftgen.testing.sglang import free_port
from tests.operator.harness import BATCH, GJ, OPERATOR_TEST_ENV, wait_for
from tests.operator.probes import operator_metrics, wait_live

from .conftest import DOCKER, IN, REPO

# The first test also builds the image (minutes with the vfs storage driver, a cold cache).
pytestmark = [pytest.mark.image, pytest.mark.timeout(1800)]

NS = "drafters"
# As tests/operator's in-process runs set them (harness.OPERATOR_TEST_ENV), preflight left on.
OPERATOR_ENV = {
    k: OPERATOR_TEST_ENV[k]
    for k in (
        "DRAFTGEN_OPERATOR_POLL_INTERVAL_SECONDS",
        "DRAFTGEN_OPERATOR_HTTP_TIMEOUT_SECONDS",
        "DRAFTGEN_OPERATOR_GENERATOR_IMAGE",
    )
}


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
        wait_live(live, timeout=60)
        job = yaml.safe_load((REPO / "examples" / "kimi-k2.5.yaml").read_text())
        job = copy.deepcopy(job)
        job["metadata"] = {"name": "kimi", "namespace": NS}
        emulator.create(GJ, "generationjobs", NS, job)
        # With the default settings the first child is the preflight Job (the server follows
        # once it passed: tests/operator/test_preflight_operator.py).
        wait_for(lambda: emulator.get(BATCH, "jobs", NS, "kimi-preflight"), "the preflight Job", 60)
        text = operator_metrics(metrics, "draftgen_operator_jobs", timeout=60)
        assert 'draftgen_operator_reconcile_errors_total{kind="api"}' not in text
    finally:
        container.exec("sh", "-c", "kill -TERM $(cat /tmp/operator.pid)", check=False)
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-3000:]
