"""A child the API server refuses (422) ends the job: phase Failed, reason ChildRejected, the
message naming the spec's field and the API server's words, and no retry until the spec changes.

The spec checks (operator/pod_rules.py) refuse the known cases before any child is written, so
the test turns them off, as for a rule of a cluster they do not know; the emulator answers as a
real kube-apiserver (tests/operator/emulator/validation.py)."""

from __future__ import annotations

from draftgen.controller import validate

from .harness import Cluster, example_job, running_operator, wait_for

TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "value": "true"}


def test_a_child_the_api_server_refuses_fails_the_job_naming_the_field(
    cluster: Cluster, monkeypatch
) -> None:
    monkeypatch.setattr(validate, "pod_problems", lambda spec: [])
    job = example_job(cluster.ns)
    job["spec"]["server"]["tolerations"] = [TOLERATION]
    with running_operator():
        cluster.apply(job)
        status = cluster.wait_phase("kimi", "Failed")
        failed = cluster.condition("kimi", "Failed")
        assert failed is not None and failed["reason"] == "ChildRejected"
        for words in (
            "server",
            "spec.server.tolerations[0].value",
            "value must be empty",
            "edit it",
        ):
            assert words in status["message"], status["message"]
        assert cluster.deployment("kimi-server-0") is None

        # Fixed: the job runs again.
        cluster.edit_spec("kimi", {"server": {"tolerations": [{**TOLERATION, "value": None}]}})
        wait_for(lambda: cluster.deployment("kimi-server-0"), "the server after the fix")
        cluster.wait_phase("kimi", "StartingServer")
