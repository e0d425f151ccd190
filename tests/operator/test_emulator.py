"""The emulator harness behaves like an API server where kopf and the operator depend on it
(a harness that silently did not would make every other test here meaningless)."""

from __future__ import annotations

import json

from .harness import APPS, Cluster


def _deployment(name: str, labels: dict) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "drafters", "labels": labels},
        "spec": {"replicas": 1},
    }


def test_versions_generations_conflicts_and_selectors(cluster: Cluster) -> None:
    emu = cluster.emu
    made = emu.create(APPS, "deployments", "drafters", _deployment("a", {"x": "1"}))
    emu.create(APPS, "deployments", "drafters", _deployment("b", {"x": "2"}))
    meta = made["metadata"]
    assert meta["uid"] and meta["creationTimestamp"] and meta["generation"] == 1
    rv = meta["resourceVersion"]

    after_status = emu.patch(
        APPS, "deployments", "drafters", "a", {"status": {"readyReplicas": 1}}, subresource="status"
    )
    assert after_status["metadata"]["resourceVersion"] != rv
    assert after_status["metadata"]["generation"] == 1  # status: no new generation
    after_spec = emu.patch(APPS, "deployments", "drafters", "a", {"spec": {"replicas": 0}})
    assert after_spec["metadata"]["generation"] == 2

    # A JSON patch testing a stale resourceVersion is refused with 422, as kopf expects.
    rsp = emu.http.patch(
        f"{APPS}/namespaces/drafters/deployments/a",
        json=[
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "replace", "path": "/spec/replicas", "value": 3},
        ],
        headers={"Content-Type": "application/json-patch+json"},
    )
    assert rsp.status_code == 422
    assert cluster.deployment("a")["spec"]["replicas"] == 0

    listed = emu.http.get(
        f"{APPS}/namespaces/drafters/deployments", params={"labelSelector": "x=2"}
    ).json()["items"]
    assert [o["metadata"]["name"] for o in listed] == ["b"]
    assert emu.creates("deployments") == ["a", "b"]


def test_a_watch_starts_where_the_list_ended(cluster: Cluster) -> None:
    """kopf lists, then watches from the list's resourceVersion: objects it listed must not come
    again as ADDED (kopf would handle them twice and lose its finalizer patch to a 422), and a
    change made after the list must come exactly once."""
    emu = cluster.emu
    emu.create(APPS, "deployments", "drafters", _deployment("listed", {"x": "1"}))
    listing = emu.http.get(f"{APPS}/namespaces/drafters/deployments").json()
    emu.create(APPS, "deployments", "drafters", _deployment("after", {"x": "2"}))
    seen = []
    with emu.http.stream(
        "GET",
        f"{APPS}/namespaces/drafters/deployments",
        params={"watch": "true", "resourceVersion": listing["metadata"]["resourceVersion"]},
    ) as rsp:
        lines = rsp.iter_lines()
        for line in lines:
            if not line.strip():
                continue
            event = json.loads(line)
            seen.append((event["type"], event["object"]["metadata"]["name"]))
            if len(seen) == 1:
                emu.patch(APPS, "deployments", "drafters", "listed", {"spec": {"replicas": 2}})
            if len(seen) == 2:
                break
    assert seen == [("ADDED", "after"), ("MODIFIED", "listed")]
