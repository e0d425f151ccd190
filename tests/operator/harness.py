"""The operator tests' harness: a fresh Kubernetes emulator per test, kopf running the real
handlers against it, and helpers that play the parts of the missing controllers (ReplicaSet, Job,
kubelet). tests/operator/conftest.py provides its fixtures; tests/faults imports it too."""

from __future__ import annotations

import atexit
import contextlib
import copy
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from draftgen.testing.sglang import free_port

from .emulator import EmulatorThread

# One kubeconfig path for the whole session (its content changes per test: each emulator writes
# its own address). $KUBECONFIG points at it only while a test's emulator or an operator run
# needs it (the `emulator` fixture, `running_operator`): set here for the whole process, it
# would follow every other test directory collected in the same session (tests/cluster's real
# cluster included).
_KUBECONFIG = Path(tempfile.mkdtemp(prefix="draftgen-op-")) / "kubeconfig"
atexit.register(shutil.rmtree, _KUBECONFIG.parent, ignore_errors=True)  # one per pytest process
# The operator's settings under test: a short poll interval, no metrics or liveness port.
OPERATOR_TEST_ENV = {
    "DRAFTGEN_OPERATOR_POLL_INTERVAL_SECONDS": "0.3",
    "DRAFTGEN_OPERATOR_METRICS_PORT": "0",
    "DRAFTGEN_OPERATOR_LIVENESS_PORT": "0",
    "DRAFTGEN_OPERATOR_HTTP_TIMEOUT_SECONDS": "1",
    "DRAFTGEN_OPERATOR_CRASH_LOOP_RESTARTS": "3",
    "DRAFTGEN_OPERATOR_GENERATOR_IMAGE": "registry.example/draftgen:test",
    # The server's lifecycle without the preflight Job in front of it (tests/operator/
    # test_preflight_operator.py turns it on).
    "DRAFTGEN_OPERATOR_PREFLIGHT": "0",
}


def set_operator_test_env() -> None:
    """Put OPERATOR_TEST_ENV in the environment. The handlers read their settings when first
    imported, so the conftests call this from `pytest_configure`, before any test module imports
    them. Only the operator reads `DRAFTGEN_OPERATOR_*`, so they may stay for the session."""
    os.environ.update(OPERATOR_TEST_ENV)


GJ = "/apis/draftgen.io/v1alpha1"
APPS = "/apis/apps/v1"
BATCH = "/apis/batch/v1"
CORE = "/api/v1"
REPO = Path(__file__).resolve().parents[2]


def wait_for(fn: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    """Poll until `fn()` is truthy; the timeout only bounds a failure, it asserts no speed."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except Exception as err:  # a half-written object: try again
            last = err
        if last and not isinstance(last, Exception):
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; last value: {last!r}")


class Cluster:
    """The emulator plus what controllers and kubelets would do, done by hand."""

    def __init__(self, emu: EmulatorThread, namespace: str) -> None:
        self.emu = emu
        self.ns = namespace

    # GenerationJobs
    def apply(self, job: dict) -> dict:
        return self.emu.create(GJ, "generationjobs", self.ns, job)

    def job(self, name: str) -> dict | None:
        return self.emu.get(GJ, "generationjobs", self.ns, name)

    def status(self, name: str) -> dict:
        return (self.job(name) or {}).get("status") or {}

    def edit_spec(self, name: str, patch: dict) -> dict:
        return self.emu.patch(GJ, "generationjobs", self.ns, name, {"spec": patch})

    def wait_phase(self, name: str, phase: str, timeout: float = 30.0) -> dict:
        return wait_for(
            lambda: (s := self.status(name)).get("phase") == phase and s, f"phase {phase}", timeout
        )

    def condition(self, name: str, type_: str) -> dict | None:
        for cond in self.status(name).get("conditions") or []:
            if cond["type"] == type_:
                return cond
        return None

    # children
    def deployment(self, name: str) -> dict | None:
        return self.emu.get(APPS, "deployments", self.ns, name)

    def service(self, name: str) -> dict | None:
        return self.emu.get(CORE, "services", self.ns, name)

    def configmap(self, name: str) -> dict | None:
        return self.emu.get(CORE, "configmaps", self.ns, name)

    def batch_job(self, name: str) -> dict | None:
        return self.emu.get(BATCH, "jobs", self.ns, name)

    # the parts of the controllers and kubelet the emulator lacks
    def server_ready(
        self, job: str, replica: int = 0, ready: bool = True, pod_ip: str = "127.0.0.1"
    ) -> None:
        """A running server pod and its Deployment's readyReplicas, as a cluster would report."""
        name = f"{job}-server-{replica}"
        self.put_pod(
            f"{name}-abc12",
            {
                "draftgen.io/job": job,
                "draftgen.io/component": "server",
                "draftgen.io/replica": str(replica),
            },
            {
                "phase": "Running",
                "podIP": pod_ip,
                "containerStatuses": [
                    {"name": "sglang", "ready": ready, "restartCount": 0, "state": {"running": {}}}
                ],
            },
        )
        self.emu.patch(
            APPS,
            "deployments",
            self.ns,
            name,
            {"status": {"replicas": 1, "readyReplicas": 1 if ready else 0}},
            subresource="status",
        )

    def put_crashed_server(
        self, terminated: dict, restarts: int = 3, waiting: str | None = "CrashLoopBackOff"
    ) -> None:
        """Job kimi's server pod as a kubelet reports a container that died: its last
        termination, how often it restarted, and what it waits for now (None: nothing)."""
        self.put_pod(
            "kimi-server-0-abc12",
            {"draftgen.io/job": "kimi", "draftgen.io/component": "server"},
            {
                "phase": "Running",
                "containerStatuses": [
                    {
                        "name": "sglang",
                        "ready": False,
                        "restartCount": restarts,
                        "state": {"waiting": {"reason": waiting}} if waiting else {},
                        "lastState": {"terminated": terminated},
                    }
                ],
            },
        )

    def put_pod(self, name: str, labels: dict, status: dict) -> None:
        if self.emu.get(CORE, "pods", self.ns, name) is None:
            self.emu.create(
                CORE,
                "pods",
                self.ns,
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name, "namespace": self.ns, "labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            )
        self.emu.patch(CORE, "pods", self.ns, name, {"status": status}, subresource="status")

    def generator_running(self, job: str, pod_ip: str = "127.0.0.1") -> None:
        self.put_pod(
            f"{job}-generator-xyz34",
            {"draftgen.io/job": job, "draftgen.io/component": "generator"},
            {
                "phase": "Running",
                "podIP": pod_ip,
                "containerStatuses": [
                    {
                        "name": "generator",
                        "ready": True,
                        "restartCount": 0,
                        "state": {"running": {}},
                    }
                ],
            },
        )

    def generator_exited(
        self, pod: str, exit_code: int, message: str, finished_at: str = "2026-01-01T00:00:00Z"
    ) -> None:
        """Job kimi's generator pod `pod` as a kubelet reports a container that exited."""
        self.put_pod(
            pod,
            {"draftgen.io/job": "kimi", "draftgen.io/component": "generator"},
            {
                "phase": "Succeeded" if exit_code == 0 else "Failed",
                "containerStatuses": [
                    {
                        "name": "generator",
                        "restartCount": 0,
                        "state": {
                            "terminated": {
                                "exitCode": exit_code,
                                "finishedAt": finished_at,
                                "message": message,
                            }
                        },
                    }
                ],
            },
        )

    def server_scaled_down(self, deployment: str = "kimi-server-0") -> None:
        """What the ReplicaSet controller reports once a scaled-down server's pod is gone."""
        self.emu.patch(
            APPS,
            "deployments",
            self.ns,
            deployment,
            {"status": {"replicas": 0, "readyReplicas": 0}},
            subresource="status",
        )

    def finish_generator(
        self,
        job: str,
        succeeded: bool = True,
        message: str = "",
        failed: int = 7,
        reason: str = "BackoffLimitExceeded",
    ) -> None:
        """The Job controller's status for a generator Job that ended (`failed`: its failed
        pods, i.e. attempts)."""
        cond = (
            {"type": "Complete", "status": "True"}
            if succeeded
            else {
                "type": "Failed",
                "status": "True",
                "reason": reason,
                "message": message or "Job has reached the specified backoff limit",
            }
        )
        self.emu.patch(
            BATCH,
            "jobs",
            self.ns,
            f"{job}-generator",
            {
                "status": {
                    "succeeded": 1 if succeeded else 0,
                    "failed": 0 if succeeded else failed,
                    "conditions": [cond],
                }
            },
            subresource="status",
        )


def plain_webhook(monkeypatch, port: int | None = None, **settings: Any) -> int:
    """Turn the operator's admission webhook on for the next `running_operator()`: plain HTTP on
    127.0.0.1 (no certificates in tests) at a free port, with any other settings given; returns
    the port."""
    import dataclasses

    from draftgen.controller.handlers import state

    port = free_port() if port is None else port
    monkeypatch.setattr(
        state,
        "SETTINGS",
        dataclasses.replace(
            state.SETTINGS,
            webhook=True,
            webhook_port=port,
            webhook_host="127.0.0.1",
            webhook_insecure=True,
            **settings,
        ),
    )
    return port


def example_job(namespace: str, name: str = "kimi", **spec_changes: Any) -> dict:
    """examples/kimi-k2.5.yaml in the test's namespace with a short name."""
    raw = yaml.safe_load((REPO / "examples" / "kimi-k2.5.yaml").read_text())
    raw = copy.deepcopy(raw)
    raw["metadata"] = {"name": name, "namespace": namespace}
    raw["spec"].update(spec_changes)
    return raw


@pytest.fixture
def emulator(monkeypatch):
    # $KUBECONFIG for the test too: `draftgen operator` subprocesses (test_cli) inherit it.
    monkeypatch.setenv("KUBECONFIG", str(_KUBECONFIG))
    emu = EmulatorThread(_KUBECONFIG.parent, kubeconfig=_KUBECONFIG).start()
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def cluster(emulator: EmulatorThread) -> Cluster:
    return Cluster(emulator, "drafters")


@contextlib.contextmanager
def kopf_registry_restored():
    """Undo what one operator run added to kopf's process-wide handler registry.

    In a cluster the operator process starts once. Here one pytest process starts it many times,
    and its startup handler registers the admission handler (`validate.register_webhook`) into
    kopf's default registry when the webhook is on — once per process. Left there, every later
    run without a webhook server dies at startup ("Admission handlers exist, but no admission
    server/tunnel is configured"): tests/faults' operator tests after tests/operator/test_webhook.
    So each run starts from the handlers the handlers package registers at import, and leaves
    the registry (and validate's "registered once" flag, which mirrors it) as it found them."""
    import kopf

    import draftgen.controller.handlers  # noqa: F401  (its import-time handlers belong in the snapshot)
    from draftgen.controller import validate

    registry = kopf.get_default_registry()
    # kopf has no public way to remove a handler: restore each sub-registry's list in place.
    subregistries = [sub for sub in vars(registry).values() if hasattr(sub, "_handlers")]
    saved = [(sub, list(sub._handlers)) for sub in subregistries]
    registered = validate._registered
    try:
        yield
    finally:
        for sub, handlers in saved:
            sub._handlers[:] = handlers
        validate._registered = registered


@contextlib.contextmanager
def running_operator(args: tuple[str, ...] = ("--all-namespaces", "--standalone")):
    """kopf running `draftgen.controller.handlers` in a thread, as `kopf run` would, against
    the emulator's kubeconfig; whatever the run registered with kopf, set in the environment or
    pointed the `kubernetes` package at is undone after it."""
    import kubernetes.config.kube_config as kube_config
    from kopf.testing import KopfRunner

    # The operator's API client reads $KUBECONFIG at startup; kopf logs in through the
    # `kubernetes` package, which fixed its default kubeconfig path from $KUBECONFIG when it was
    # first imported (by whichever test came first). Point both at the emulator for this run.
    saved_env = os.environ.get("KUBECONFIG")
    saved_default = kube_config.KUBE_CONFIG_DEFAULT_LOCATION
    # kopf's start-up puts a handler on the root logger that writes to the runner's own output,
    # closed when the run ends: a later record (the emulator's access log) would meet it.
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    os.environ["KUBECONFIG"] = kube_config.KUBE_CONFIG_DEFAULT_LOCATION = str(_KUBECONFIG)

    verbose = ["--verbose"] if os.environ.get("DRAFTGEN_TEST_KOPF_VERBOSE") else []
    try:
        with (
            kopf_registry_restored(),
            KopfRunner(["run", *args, *verbose, "-m", "draftgen.controller.handlers"]) as runner,
        ):
            yield runner
    finally:
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
        kube_config.KUBE_CONFIG_DEFAULT_LOCATION = saved_default
        if saved_env is None:
            os.environ.pop("KUBECONFIG", None)
        else:
            os.environ["KUBECONFIG"] = saved_env
    assert runner.exception is None, runner.output[-4000:]
    assert runner.exit_code == 0, runner.output[-4000:]


@pytest.fixture
def operator(cluster: Cluster):
    with running_operator() as runner:
        yield runner
