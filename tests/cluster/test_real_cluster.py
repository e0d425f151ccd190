"""What only a real cluster can show (docs/operator.md, "what only a real cluster shows").

Opt-in and never run on the development machines (there is no cluster there):

    DRAFTGEN_CLUSTER_TESTS=1 DRAFTGEN_CLUSTER_NAMESPACE=draftgen-e2e \
        .cache/venv/bin/python -m pytest -m cluster tests/cluster

Needs: the current kubeconfig pointing at a cluster with the draftgen chart installed (CRD and a
running operator watching the namespace), and for the GPU test `DRAFTGEN_CLUSTER_GPU_JOB` naming
a GenerationJob YAML whose model fits the cluster's GPUs (its PVCs must exist).
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
import yaml

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(
        os.environ.get("DRAFTGEN_CLUSTER_TESTS") != "1",
        reason="real-cluster tests are opt-in: set DRAFTGEN_CLUSTER_TESTS=1",
    ),
]

GROUP, VERSION, PLURAL = "draftgen.io", "v1alpha1", "generationjobs"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def api():
    from kubernetes import client, config

    config.load_kube_config()
    return client


@pytest.fixture(scope="module")
def namespace() -> str:
    return os.environ.get("DRAFTGEN_CLUSTER_NAMESPACE", "draftgen-e2e")


def _job(namespace: str, name: str) -> dict:
    raw = yaml.safe_load((REPO / "examples" / "kimi-k2.5.yaml").read_text())
    raw["metadata"] = {"name": name, "namespace": namespace}
    # Never schedulable on purpose: these tests need the objects, not the GPUs.
    raw["spec"]["server"]["nodeSelector"] = {"draftgen.io/e2e": "no-such-node"}
    return raw


def _wait(fn, what: str, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(2)
    raise AssertionError(f"timed out waiting for {what}")


def test_crd_schema_refuses_unknown_fields(api, namespace: str) -> None:
    job = _job(namespace, f"e2e-{uuid.uuid4().hex[:6]}")
    job["spec"]["server"]["tensorParalelSize"] = 8  # misspelt
    with pytest.raises(api.exceptions.ApiException) as err:
        api.CustomObjectsApi().create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, job, field_validation="Strict"
        )
    assert err.value.status in (400, 422)


def test_children_are_garbage_collected_through_owner_references(api, namespace: str) -> None:
    name = f"e2e-{uuid.uuid4().hex[:6]}"
    custom = api.CustomObjectsApi()
    created = custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, _job(namespace, name)
    )
    apps = api.AppsV1Api()
    _wait(
        lambda: (
            apps.list_namespaced_deployment(
                namespace, label_selector=f"draftgen.io/job={name}"
            ).items
        ),
        "the server Deployment",
        120,
    )
    # An extra object owned by the job but unknown to the operator: only GC can remove it.
    core = api.CoreV1Api()
    core.create_namespaced_config_map(
        namespace,
        {
            "metadata": {
                "name": f"{name}-gc-probe",
                "ownerReferences": [
                    {
                        "apiVersion": f"{GROUP}/{VERSION}",
                        "kind": "GenerationJob",
                        "name": name,
                        "uid": created["metadata"]["uid"],
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "data": {"probe": "1"},
        },
    )
    custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    _wait(
        lambda: (
            not core.list_namespaced_config_map(
                namespace, field_selector=f"metadata.name={name}-gc-probe"
            ).items
        ),
        "garbage collection of the owned ConfigMap",
        300,
    )
    _wait(
        lambda: (
            not apps.list_namespaced_deployment(
                namespace, label_selector=f"draftgen.io/job={name}"
            ).items
        ),
        "the server gone",
        300,
    )


def test_unschedulable_server_is_reported_and_printer_columns_show_it(api, namespace) -> None:
    name = f"e2e-{uuid.uuid4().hex[:6]}"
    custom = api.CustomObjectsApi()
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, _job(namespace, name))
    try:

        def unschedulable():
            status = (
                custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name).get(
                    "status"
                )
                or {}
            )
            conds = {c["type"]: c for c in status.get("conditions") or []}
            return conds.get("ServerReady", {}).get("reason") == "Unschedulable"

        _wait(unschedulable, "ServerReady reason Unschedulable", 300)
        table = custom.get_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            name,
            _headers={"Accept": "application/json;as=Table;g=meta.k8s.io;v=v1"},
        )
        columns = [c["name"] for c in table["columnDefinitions"]]
        assert {"Phase", "Progress", "ETA"} <= set(columns)
    finally:
        custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)


@pytest.mark.skipif(
    not os.environ.get("DRAFTGEN_CLUSTER_GPU_JOB"),
    reason="set DRAFTGEN_CLUSTER_GPU_JOB to a GenerationJob YAML for a GPU node",
)
def test_server_probes_pass_on_a_gpu_node_and_the_job_generates(api, namespace) -> None:
    job = yaml.safe_load(Path(os.environ["DRAFTGEN_CLUSTER_GPU_JOB"]).read_text())
    job["metadata"]["namespace"] = namespace
    name = job["metadata"]["name"]
    custom = api.CustomObjectsApi()
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, job)

    def generating():
        status = (
            custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name).get(
                "status"
            )
            or {}
        )
        assert status.get("phase") != "Failed", status.get("message")
        return status.get("phase") in ("Generating", "Succeeded") and status

    status = _wait(generating, "the server ready and the generator started", 45 * 60)
    assert status["server"]["restarts"] == 0
    status = _wait(
        lambda: (
            (
                s := custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)[
                    "status"
                ]
            )
            .get("server", {})
            .get("maxTotalNumTokens")
            and s
        ),
        "the KV capacity from /get_server_info",
        600,
    )
    assert status["server"]["maxTotalNumTokens"] > 0
