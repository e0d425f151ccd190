"""A child's pod that cannot be scheduled (a missing claim, only tainted nodes) is reported at
once on the step it blocks, and fails the job once it has been stuck for `stuck_pod_seconds`:
the model download, the preflight, the server and the generator alike (the scheduler's
condition played by the test, as a cluster would report it)."""

from __future__ import annotations

import datetime

import pytest

from draftgen.controller import names

from .harness import Cluster, example_job
from .probes import reconcile_steps

TAINTED = "0/4 nodes are available: 4 node(s) had untolerated taint {nvidia.com/gpu: }."
LIMIT = 600

# step → (how the job is set up, the pod's component and container, the phase it waits in,
# the condition that reports it, its reason)
STEPS = {
    "model download": (
        "hf",
        "model-download",
        names.DOWNLOAD_CONTAINER,
        "DownloadingModel",
        "ModelReady",
        "ModelDownloadUnschedulable",
    ),
    "preflight": (
        "preflight",
        "preflight",
        names.PREFLIGHT_CONTAINER,
        "Preflight",
        "InputsValid",
        "PreflightUnschedulable",
    ),
    "server": (
        "plain",
        "server",
        names.SERVER_CONTAINER,
        "StartingServer",
        "ServerReady",
        "Unschedulable",
    ),
}


def _ago(seconds: int) -> str:
    when = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _unschedulable(cluster: Cluster, component: str, container: str, since: str) -> None:
    cluster.put_pod(
        f"kimi-{component}-pod01",
        {names.JOB_LABEL: "kimi", names.COMPONENT_LABEL: component},
        {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": TAINTED,
                    "lastTransitionTime": since,
                }
            ],
        },
    )


@pytest.mark.parametrize("step_name", list(STEPS))
def test_a_pod_that_cannot_be_scheduled_is_reported_then_fails_the_job(
    cluster: Cluster, step_name: str
) -> None:
    setup, component, container, phase, condition, reason = STEPS[step_name]
    raw = example_job(cluster.ns)
    if setup == "hf":
        raw["spec"]["model"]["weights"] = "hf://moonshotai/Kimi-K2.5"
    with reconcile_steps(cluster, preflight=setup != "plain", stuck_pod_seconds=LIMIT) as step:
        cluster.apply(raw)
        assert step()["phase"] == phase

        # Stuck for a minute: reported where the job waits, with the scheduler's words.
        _unschedulable(cluster, component, container, _ago(60))
        status = step()
        assert status["phase"] == phase
        assert "cannot be scheduled" in status["message"] and TAINTED in status["message"]
        cond = cluster.condition("kimi", condition)
        assert (cond["status"], cond["reason"]) == ("False", reason)

        # Stuck past the deadline: the job fails with the reason, not "waiting" forever.
        _unschedulable(cluster, component, container, _ago(LIMIT + 60))
        status = step()
        assert status["phase"] == "Failed"
        failed = cluster.condition("kimi", "Failed")
        assert failed["reason"] == reason
        assert TAINTED in failed["message"] and "gave up after 10m" in failed["message"]
