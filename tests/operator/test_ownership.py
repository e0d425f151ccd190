"""Issue 21, class 8: the operator never adopts, changes or deletes an object its GenerationJob
does not control. A foreign object holding a child's name is refused with a condition naming it
and left exactly as it was; deletion deletes only what the job controls.

Each step is the reconcile kopf's handlers run (read the job fresh, reconcile, write the
status), against the emulator, with owner references set as the operator sets them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from draftgen.controller.kube import Kube
from draftgen.controller.reconcile import JobRef, Reconciler
from draftgen.controller.settings import OperatorSettings

from .harness import APPS, BATCH, CORE, Cluster, example_job

NS = "drafters"

FOREIGN: dict[str, tuple[str, str, dict[str, Any]]] = {
    # kind → (API, plural, object) named as one of job `kimi`'s children
    "Service": (
        CORE,
        "services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kimi-server", "labels": {"team": "web"}},
            "spec": {"ports": [{"port": 80}]},
        },
    ),
    "Deployment": (
        APPS,
        "deployments",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "kimi-server-0", "labels": {"team": "web"}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"image": "web"}]}}},
        },
    ),
    "ConfigMap": (
        CORE,
        "configmaps",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "kimi-generator"},
            "data": {"job.yaml": "someone else's"},
        },
    ),
    "Job": (
        BATCH,
        "jobs",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "kimi-generator"},
            "spec": {"template": {"spec": {"containers": [{"image": "batch"}]}}},
        },
    ),
}


def _step(rec: Reconciler, name: str = "kimi") -> dict:
    fresh = rec.kube.get("GenerationJob", NS, name)
    assert fresh is not None
    ref = JobRef(body=fresh)
    outcome = rec.reconcile(ref)
    old = ref.old_status
    patch = {k: v for k, v in outcome.status.items() if old.get(k) != v}
    patch.update({k: None for k in old if k not in outcome.status and k != "kopf"})
    if patch:
        rec.kube.patch("GenerationJob", NS, name, {"status": patch}, subresource="status")
    return outcome.status


def _foreign(cluster: Cluster, kind: str, owner: dict[str, str] | None = None) -> dict:
    api, plural, obj = FOREIGN[kind]
    obj = copy.deepcopy(obj)
    if owner:
        obj["metadata"]["ownerReferences"] = [
            {"controller": True, "blockOwnerDeletion": True, **owner}
        ]
    return cluster.emu.create(api, plural, NS, obj)


def _stored(cluster: Cluster, kind: str) -> dict | None:
    api, plural, obj = FOREIGN[kind]
    return cluster.emu.get(api, plural, NS, obj["metadata"]["name"])


def _writes_to(cluster: Cluster, kind: str) -> list[str]:
    _, plural, obj = FOREIGN[kind]
    return [
        r["method"]
        for r in cluster.emu.requests()
        if r["plural"] == plural
        and r["name"] == obj["metadata"]["name"]
        and r["agent"].startswith("draftgen-operator")
        and r["method"] in ("PATCH", "PUT", "DELETE")
    ]


@pytest.fixture
def rec(cluster: Cluster) -> Reconciler:
    return Reconciler(
        Kube(cluster.emu.url, backoff=0.01),
        OperatorSettings(http_timeout_seconds=0.2, preflight=False),
    )


def _to_generating(cluster: Cluster, rec: Reconciler) -> None:
    for _ in range(3):
        _step(rec)
        dep = cluster.deployment("kimi-server-0")
        if dep is not None and dep["metadata"].get("ownerReferences"):  # ours: make it ready
            cluster.server_ready("kimi")


def _assert_refused(status: dict, kind: str, name: str) -> None:
    assert status["phase"] == "Failed"
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "ObjectNotOwned"
    assert f"{kind} {NS}/{name} already exists" in failed["message"]
    assert (
        "delete or rename that object, or give the GenerationJob another name" in failed["message"]
    )


@pytest.mark.parametrize("kind", ["Service", "Deployment", "ConfigMap", "Job"])
def test_a_foreign_object_with_a_childs_name_is_refused_and_left_alone(
    cluster: Cluster, rec: Reconciler, kind: str
) -> None:
    before = _foreign(cluster, kind)
    cluster.apply(example_job(NS))
    _to_generating(cluster, rec)
    status = _step(rec)
    _assert_refused(status, kind, before["metadata"]["name"])
    after = _stored(cluster, kind)
    assert after == before, "the foreign object was changed"
    assert _writes_to(cluster, kind) == []


def test_an_object_controlled_by_another_generationjob_is_named_in_the_refusal(
    cluster: Cluster, rec: Reconciler
) -> None:
    other = cluster.apply(example_job(NS, name="other"))
    _foreign(
        cluster,
        "Deployment",
        {
            "apiVersion": "draftgen.io/v1alpha1",
            "kind": "GenerationJob",
            "name": "other",
            "uid": other["metadata"]["uid"],
        },
    )
    cluster.apply(example_job(NS))
    status = _step(rec)
    _assert_refused(status, "Deployment", "kimi-server-0")
    assert "controlled by GenerationJob other" in status["message"]


def test_the_job_goes_on_once_the_foreign_object_is_gone(cluster: Cluster, rec: Reconciler) -> None:
    _foreign(cluster, "Deployment")
    cluster.apply(example_job(NS))
    assert _step(rec)["phase"] == "Failed"
    assert _step(rec)["phase"] == "Failed"  # refused again, unchanged, on every poll
    cluster.emu.delete(APPS, "deployments", NS, "kimi-server-0")
    status = _step(rec)
    assert status["phase"] == "StartingServer"
    assert "Failed" not in {c["type"] for c in status["conditions"]}
    dep = cluster.deployment("kimi-server-0")
    assert dep is not None
    assert dep["metadata"]["ownerReferences"][0]["uid"] == cluster.job("kimi")["metadata"]["uid"]


def test_a_foreign_deployment_with_the_jobs_labels_is_neither_scaled_nor_deleted(
    cluster: Cluster, rec: Reconciler
) -> None:
    """Labels are not ownership: an extra replica's name with the job's labels, not ours."""
    _, _, obj = FOREIGN["Deployment"]
    lookalike = copy.deepcopy(obj)
    lookalike["metadata"] = {
        "name": "kimi-server-7",
        "labels": {"draftgen.io/job": "kimi", "draftgen.io/component": "server"},
    }
    cluster.emu.create(APPS, "deployments", NS, lookalike)
    cluster.apply(example_job(NS))
    _to_generating(cluster, rec)
    cluster.edit_spec("kimi", {"suspend": True})
    assert _step(rec)["phase"] == "Suspended"
    kept = cluster.deployment("kimi-server-7")
    assert kept is not None and kept["spec"]["replicas"] == 3
    rec.delete_children(JobRef(body=cluster.job("kimi")))
    assert cluster.deployment("kimi-server-7") is not None
    assert cluster.deployment("kimi-server-0") is None


@pytest.mark.parametrize("kind", ["Service", "ConfigMap", "Job"])
def test_deletion_deletes_only_what_the_job_controls(
    cluster: Cluster, rec: Reconciler, kind: str
) -> None:
    """A job refused at once (a foreign object holds one name) and then deleted: the foreign
    object stays; what the job did create goes."""
    _foreign(cluster, kind)
    job = cluster.apply(example_job(NS))
    _to_generating(cluster, rec)
    rec.delete_children(JobRef(body=job))
    assert _stored(cluster, kind) is not None
    assert _writes_to(cluster, kind) == []
    assert cluster.deployment("kimi-server-0") is None
