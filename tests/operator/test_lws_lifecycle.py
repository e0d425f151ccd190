"""A multi-node job's life, kopf against the emulator with the LeaderWorkerSet CRD registered:
start (a LeaderWorkerSet per replica, no generator before its leader is ready), a worker restart,
a budget edit, suspend and resume, success and teardown, deletion; and the refusal, with the
reason, when the CRD is not installed (then the start once it is). The emulator has no LWS
controller: the tests play it (pods, `status.readyReplicas`), as they play the ReplicaSet
controller for Deployments."""

from __future__ import annotations

import dataclasses

import kmock
import pytest
import yaml

from draftgen.controller import names, rbac
from draftgen.controller.handlers import state
from draftgen.controller.render import leaderworkerset as lws

from .harness import REPO, Cluster, running_operator, wait_for
from .probes import rule_triples
from .test_rbac_modes import chart_grants

LWS_API = f"/apis/{lws.API_VERSION}"
JOB = "kimi"


def h100_job(namespace: str, **server: object) -> dict:
    raw = yaml.safe_load((REPO / "examples" / "kimi-k2.5-h100.yaml").read_text())
    raw["metadata"] = {"name": JOB, "namespace": namespace}
    raw["spec"]["server"].update(server)
    return raw


def install_lws(cluster: Cluster) -> None:
    """What installing LeaderWorkerSet's CRD does to the API: the kind is served."""

    def register() -> None:
        cluster.emu.emulator.resources[f"{lws.API_VERSION}/{lws.PLURAL}"] = kmock.ResourceInfo(  # type: ignore[union-attr]
            kind=lws.KIND,
            namespaced=True,
            verbs={"get", "list", "watch", "create", "patch", "delete"},
            subresources={"status", "scale"},
        )

    cluster.emu.call(register)


def group(cluster: Cluster, replica: int = 0) -> dict | None:
    return cluster.emu.get(LWS_API, lws.PLURAL, cluster.ns, names.server_name(JOB, replica))


def group_ready(
    cluster: Cluster, replica: int = 0, ready: bool = True, worker_restarts: int = 0
) -> None:
    """What the LWS controller and the kubelets report: the leader and worker pods of one
    group, and the group's readiness in the LeaderWorkerSet's status."""
    base = names.server_name(JOB, replica)
    for index, role in ((0, "leader"), (1, "worker")):
        restarts = worker_restarts if role == "worker" else 0
        cluster.put_pod(
            f"{base}-{index}" if index else f"{base}-0",
            {
                **names.selector(JOB, "server", **{names.REPLICA_LABEL: str(replica)}),
                names.ROLE_LABEL: role,
                "leaderworkerset.sigs.k8s.io/worker-index": str(index),
            },
            {
                "phase": "Running",
                "podIP": "127.0.0.1",
                "containerStatuses": [
                    {
                        "name": names.SERVER_CONTAINER,
                        "ready": ready,
                        "restartCount": restarts,
                        "state": {"running": {}},
                    }
                ],
            },
        )
    cluster.emu.patch(
        LWS_API,
        lws.PLURAL,
        cluster.ns,
        base,
        {"status": {"replicas": 1, "readyReplicas": 1 if ready else 0}},
        subresource="status",
    )


@pytest.fixture
def lws_enabled(monkeypatch) -> None:
    """The operator as the chart runs it with operator.leaderWorkerSet.enabled."""
    monkeypatch.setattr(
        state, "SETTINGS", dataclasses.replace(state.SETTINGS, leader_worker_set=True)
    )


def _leader_worker_set_calls(cluster: Cluster) -> set[str]:
    return {
        r["action"]
        for r in cluster.emu.requests()
        if r["plural"] == lws.PLURAL and r["agent"].startswith("draftgen-operator")
    }


def test_multi_node_start_worker_restart_edit_suspend_success_delete(
    cluster: Cluster, lws_enabled
) -> None:
    install_lws(cluster)
    with running_operator():
        cluster.apply(h100_job(cluster.ns))

        # 1. Start: one LeaderWorkerSet of two nodes, the Service on leaders, no Deployment,
        #    no generator before the group is ready.
        g = wait_for(lambda: group(cluster), "the server LeaderWorkerSet")
        assert g["spec"]["leaderWorkerTemplate"]["size"] == 2
        assert g["spec"]["replicas"] == 1
        assert g["metadata"]["ownerReferences"][0]["uid"] == cluster.job(JOB)["metadata"]["uid"]
        assert cluster.service("kimi-server")["spec"]["selector"][names.ROLE_LABEL] == "leader"
        assert cluster.deployment("kimi-server-0") is None
        cluster.wait_phase(JOB, "StartingServer")
        assert cluster.batch_job("kimi-generator") is None

        # 2. The group is ready → the generator, pointed at the leader.
        group_ready(cluster)
        gen = wait_for(lambda: cluster.batch_job("kimi-generator"), "the generator Job")
        args = gen["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[args.index("--server") + 1] == (
            "http://kimi-server-0-0.kimi-server-0.drafters.svc:30000"
        )
        cluster.wait_phase(JOB, "Generating")
        gen_uid = gen["metadata"]["uid"]

        # 3. A worker restarts: LWS recreates the group (restartPolicy), which is not ready for
        #    a while. The job says so and keeps its generator (it waits for the server); the
        #    LeaderWorkerSet is left to its controller.
        writes = len(cluster.emu.requests())
        group_ready(cluster, ready=False, worker_restarts=1)
        wait_for(
            lambda: cluster.condition(JOB, "ServerReady")["reason"] == "ReplicaNotReady",
            "ServerReady false while the group restarts",
        )
        assert cluster.status(JOB)["phase"] == "Generating"
        group_ready(cluster)
        wait_for(lambda: cluster.condition(JOB, "ServerReady")["status"] == "True", "ready again")
        assert cluster.batch_job("kimi-generator")["metadata"]["uid"] == gen_uid
        lws_writes = [
            r
            for r in cluster.emu.requests()[writes:]
            if r["plural"] == lws.PLURAL
            and r["action"] in ("create", "update", "delete")
            and r["agent"].startswith("draftgen-operator")
        ]
        assert lws_writes == []

        # 4. A budget edit restarts only the generator.
        hash_before = group(cluster)["metadata"]["annotations"][names.SERVER_HASH_ANNOTATION]
        datasets = cluster.job(JOB)["spec"]["datasets"]
        datasets[0]["budget"] = {"completionTokens": 20_000_000}
        cluster.edit_spec(JOB, {"datasets": datasets})
        wait_for(
            lambda: cluster.emu.creates("jobs") == ["kimi-generator", "kimi-generator"],
            "the generator restarted",
        )
        assert cluster.emu.creates(lws.PLURAL) == ["kimi-server-0"]
        assert (
            group(cluster)["metadata"]["annotations"][names.SERVER_HASH_ANNOTATION] == hash_before
        )

        # 5. Suspend: generator deleted, the group scaled to 0; resume: back to 1.
        cluster.edit_spec(JOB, {"suspend": True})
        cluster.wait_phase(JOB, "Suspended")
        wait_for(lambda: cluster.batch_job("kimi-generator") is None, "the generator deleted")
        wait_for(lambda: group(cluster)["spec"]["replicas"] == 0, "the group scaled to 0")
        cluster.edit_spec(JOB, {"suspend": False})
        wait_for(lambda: group(cluster)["spec"]["replicas"] == 1, "the group scaled to 1")
        group_ready(cluster)
        wait_for(lambda: cluster.batch_job("kimi-generator"), "the generator again")
        cluster.wait_phase(JOB, "Generating")

        # 6. Success: the LeaderWorkerSet and the Service are torn down.
        cluster.finish_generator(JOB)
        cluster.wait_phase(JOB, "Succeeded")
        wait_for(lambda: group(cluster) is None, "the group torn down")
        assert cluster.service("kimi-server") is None
        assert cluster.emu.creates(lws.PLURAL) == ["kimi-server-0"]  # never re-created

        # 7. Deletion removes what is left.
        cluster.emu.delete("/apis/draftgen.io/v1alpha1", "generationjobs", cluster.ns, JOB)
        wait_for(lambda: cluster.job(JOB) is None, "the GenerationJob gone")
        assert cluster.configmap("kimi-generator") is None
        assert cluster.batch_job("kimi-generator") is None

    # Every LeaderWorkerSet verb the chart grants was used, and no other.
    granted = {v for rule in rbac.LEADER_WORKER_SET_RULES for v in rule["verbs"]}
    used = {
        {"fetch": "get", "update": "patch"}.get(a, a) for a in _leader_worker_set_calls(cluster)
    }
    assert used <= granted and {"create", "list", "patch", "delete"} <= used


def test_refused_while_the_crd_is_missing_then_started_once_installed(
    cluster: Cluster, lws_enabled
) -> None:
    with running_operator():
        cluster.apply(h100_job(cluster.ns))
        status = cluster.wait_phase(JOB, "Failed")
        failed = cluster.condition(JOB, "Failed")
        assert failed["reason"] == "LeaderWorkerSetMissing"
        assert "install LeaderWorkerSet" in failed["message"]
        assert "nodesPerReplica" in status["message"]
        assert cluster.condition(JOB, "ServerReady")["reason"] == "LeaderWorkerSetMissing"
        assert cluster.deployment("kimi-server-0") is None  # no single-node fallback

        install_lws(cluster)
        wait_for(lambda: group(cluster), "the LeaderWorkerSet once the CRD is there")
        cluster.wait_phase(JOB, "StartingServer")
        assert cluster.condition(JOB, "Failed") is None


def test_refused_when_the_chart_did_not_enable_leader_worker_sets(cluster: Cluster) -> None:
    install_lws(cluster)  # installed in the cluster, but this operator has no RBAC for it
    with running_operator():
        cluster.apply(h100_job(cluster.ns))
        cluster.wait_phase(JOB, "Failed")
        failed = cluster.condition(JOB, "Failed")
        assert failed["reason"] == "LeaderWorkerSetMissing"
        assert "operator.leaderWorkerSet.enabled" in failed["message"]
    assert _leader_worker_set_calls(cluster) == set()  # never read without the RBAC


def test_chart_grants_leader_worker_sets_only_when_enabled() -> None:
    def triples(values: dict) -> set:
        return rule_triples(rule for grant in chart_grants(values) for rule in grant.rules)

    lws_triples = rule_triples(rbac.LEADER_WORKER_SET_RULES)
    assert not lws_triples & triples({})
    assert lws_triples <= triples({"leaderWorkerSet": {"enabled": True}})
    assert lws_triples <= triples(
        {"leaderWorkerSet": {"enabled": True}, "watchNamespaces": ["team-a"]}
    )


def test_going_multi_node_replaces_the_deployment_and_the_service(
    cluster: Cluster, lws_enabled
) -> None:
    from .harness import example_job

    install_lws(cluster)
    with running_operator():
        cluster.apply(example_job(cluster.ns))
        wait_for(lambda: cluster.deployment("kimi-server-0"), "the single-node Deployment")
        assert names.ROLE_LABEL not in cluster.service("kimi-server")["spec"]["selector"]

        cluster.edit_spec(JOB, {"server": {"nodesPerReplica": 2, "tensorParallelSize": 16}})
        wait_for(lambda: group(cluster), "the LeaderWorkerSet")
        wait_for(lambda: cluster.deployment("kimi-server-0") is None, "the Deployment deleted")
        selector = wait_for(
            lambda: (
                (svc := cluster.service("kimi-server"))
                and names.ROLE_LABEL in svc["spec"]["selector"]
                and svc["spec"]["selector"]
            ),
            "the Service on leaders",
        )
        assert selector[names.ROLE_LABEL] == "leader"
        assert group(cluster)["spec"]["leaderWorkerTemplate"]["size"] == 2
