"""Every condition describes the present, after each transition — not only the phase.

One reconcile step at a time (the code every kopf handler runs), against the emulator, so each
transition's conditions are read exactly when it happened."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .harness import Cluster, example_job
from .probes import reconcile_steps


@pytest.fixture
def step(cluster: Cluster) -> Iterator:
    """One reconcile; the conditions it wrote, as type → (status, reason)."""
    with reconcile_steps(cluster, preflight=False) as reconcile:

        def run(name: str = "kimi") -> dict:
            conditions = reconcile(name)["conditions"]
            return {c["type"]: (c["status"], c["reason"]) for c in conditions}

        yield run


def _to_generating(cluster: Cluster, step) -> dict:
    step()
    cluster.server_ready("kimi")
    conditions = step()
    assert cluster.status("kimi")["phase"] == "Generating"
    return conditions


def test_suspend_and_resume(cluster: Cluster, step) -> None:
    cluster.apply(example_job(cluster.ns))
    assert step()["Generating"] == ("False", "WaitingForServer")
    assert _to_generating(cluster, step)["ServerReady"] == ("True", "Ready")

    cluster.edit_spec("kimi", {"suspend": True})
    suspended = step()
    assert cluster.status("kimi")["phase"] == "Suspended"
    assert suspended["ServerReady"] == ("False", "Suspended")
    assert suspended["Generating"] == ("False", "Suspended")
    assert suspended["Suspended"] == ("True", "SuspendedBySpec")

    cluster.server_scaled_down()
    cluster.edit_spec("kimi", {"suspend": False})
    resumed = step()
    assert cluster.status("kimi")["phase"] == "StartingServer"
    assert "Suspended" not in resumed
    assert resumed["ServerReady"][0] == "False"
    assert resumed["Generating"] == ("False", "WaitingForServer")


def test_success_with_the_server_deleted(cluster: Cluster, step) -> None:
    cluster.apply(example_job(cluster.ns))
    _to_generating(cluster, step)
    cluster.finish_generator("kimi")
    done = step()
    assert cluster.status("kimi")["phase"] == "Succeeded"
    assert cluster.deployment("kimi-server-0") is None
    assert done["ServerReady"] == ("False", "ServerDeleted")
    assert done["Complete"] == ("True", "AllDatasetsDone")
    assert done["Generating"] == ("False", "Completed")
    assert step() == done  # a later poll of the finished job says the same


def test_generator_failure_scales_the_server_down(cluster: Cluster, step) -> None:
    cluster.apply(example_job(cluster.ns))
    _to_generating(cluster, step)
    cluster.finish_generator("kimi", succeeded=False)
    failed = step()
    assert cluster.status("kimi")["phase"] == "Failed"
    assert cluster.deployment("kimi-server-0")["spec"]["replicas"] == 0
    assert failed["ServerReady"] == ("False", "ServerScaledDown")
    assert failed["Failed"] == ("True", "GeneratorFailed")


def test_a_server_crash_keeps_its_reason_when_scaled_down(cluster: Cluster, step) -> None:
    cluster.apply(example_job(cluster.ns))
    step()
    cluster.put_crashed_server({"reason": "OOMKilled", "exitCode": 137}, waiting=None)
    failed = step()
    assert cluster.status("kimi")["phase"] == "Failed"
    assert failed["ServerReady"] == ("False", "ServerOutOfHostMemory")
    assert step()["ServerReady"] == ("False", "ServerOutOfHostMemory")
