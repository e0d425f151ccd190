"""A multi-node SGLang server as LeaderWorkerSets: pure functions of a validated spec.

With `server.nodesPerReplica` > 1 one model copy is sharded by tensor parallelism over the GPUs
of several nodes. Every serving stack does that with LeaderWorkerSet (LWS, kubernetes-sigs):
a group of pods created, placed, restarted and rolled as one. Here:

- one LeaderWorkerSet `<job>-server-<n>` per replica, with `replicas: 1` (0 when suspended) and
  `size` = nodes, the same one-object-per-replica shape as the single-node Deployments (a
  replica's rollout, suspension and deletion never touch another replica);
- the leader (node rank 0) runs SGLang's HTTP server and carries the probes; each worker runs
  `--node-rank $(LWS_WORKER_INDEX)` (LWS sets that variable, 1…nodes-1, and
  `LWS_LEADER_ADDRESS`, the leader's DNS name, in every container: the kubelet expands
  `$(VAR)` in args) and has no probes: a worker serves no HTTP, and a dead worker process
  restarts its container, which the group's `RecreateGroupOnPodRestart` turns into a restart of
  the whole group (torch.distributed cannot re-admit one rank into a running group);
- the job's headless Service selects leaders only (`draftgen.io/role: leader`), and the
  generator is given each leader's stable name in the group's own headless Service, which LWS
  creates: `<job>-server-<n>-0.<job>-server-<n>.<ns>.svc`.
What only a real cluster with the LWS controller shows (docs/operator.md): that the controller
accepts these objects, creates the pods, injects the variables and recreates the group.
"""

from __future__ import annotations

import copy
from typing import Any

from draftgen.contract.sglang_flags import SGLangFlag as F
from draftgen.spec import GenerationJobSpec

from .. import names
from ..settings import OperatorSettings
from . import server as render_server

GROUP = "leaderworkerset.x-k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "LeaderWorkerSet"
PLURAL = "leaderworkersets"
CRD_NAME = f"{PLURAL}.{GROUP}"

LEADER_ADDRESS_ENV = "LWS_LEADER_ADDRESS"
WORKER_INDEX_ENV = "LWS_WORKER_INDEX"
"""Set by the LWS controller in every container of a group (LWS v1 API)."""

DIST_INIT_PORT = 20000
"""Where the ranks of all nodes meet on the leader (`--dist-init-addr`), SGLang docs' port."""

LEADER, WORKER = names.LEADER_ROLE, names.WORKER_ROLE


def group_args(spec: GenerationJobSpec, rank: str) -> list[str]:
    """SGLang's arguments on one node of a group: the single-node ones plus the node's place."""
    return render_server.server_args(spec) + [
        str(F.NNODES),
        str(spec.server.nodes_per_replica),
        str(F.NODE_RANK),
        rank,
        str(F.DIST_INIT_ADDR),
        f"$({LEADER_ADDRESS_ENV}):{DIST_INIT_PORT}",
    ]


def _group_pod(
    spec: GenerationJobSpec, job: str, replica: int, settings: OperatorSettings, role: str
) -> dict[str, Any]:
    """The single-node pod template, made one node of a group."""
    s = spec.server
    template = copy.deepcopy(render_server.pod_template(spec, job, replica, settings))
    template["metadata"]["labels"][names.ROLE_LABEL] = role
    pod = template["spec"]
    # LWS names the pods and gives them its own headless Service as subdomain.
    pod.pop("hostname", None)
    pod.pop("subdomain", None)
    container = pod["containers"][0]
    container["args"] = group_args(spec, "0" if role == LEADER else f"$({WORKER_INDEX_ENV})")
    if role == LEADER:
        container["ports"].append(
            {"name": "dist-init", "containerPort": DIST_INIT_PORT, "protocol": "TCP"}
        )
    else:
        # No HTTP server on a worker: nothing to probe or scrape there.
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            container.pop(probe)
        container.pop("ports")
        template["metadata"]["annotations"] = {}
    if s.rdma:
        # NCCL over InfiniBand/RoCE registers (pins) memory.
        container["securityContext"]["capabilities"]["add"] = ["IPC_LOCK"]
    if s.host_network:
        pod["hostNetwork"] = True
        pod["dnsPolicy"] = "ClusterFirstWithHostNet"  # still resolve the cluster's names
    return template


def leader_worker_set(
    spec: GenerationJobSpec,
    job: str,
    namespace: str,
    replica: int,
    settings: OperatorSettings,
    *,
    running: bool = True,
) -> dict[str, Any]:
    """LeaderWorkerSet `<job>-server-<replica>`: one group of `nodesPerReplica` pods."""
    leader = _group_pod(spec, job, replica, settings, LEADER)
    worker = _group_pod(spec, job, replica, settings, WORKER)
    digest = render_server.template_hash({"leader": leader, "worker": worker})
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": render_server.replica_metadata(job, namespace, replica, digest),
        "spec": {
            "replicas": 1 if running else 0,
            # Workers start with the leader: SGLang's ranks wait for each other at
            # --dist-init-addr, and the leader is not ready before its workers joined.
            "startupPolicy": "LeaderCreated",
            # A GPU group never waits for a surge group that cannot be scheduled.
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0},
            },
            "networkConfig": {"subdomainPolicy": "Shared"},
            "leaderWorkerTemplate": {
                "size": spec.server.nodes_per_replica,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": leader,
                "workerTemplate": worker,
            },
        },
    }


def server_kind(spec: GenerationJobSpec) -> str:
    """The kind of object one server replica is."""
    return KIND if spec.server.multi_node else "Deployment"


def server_objects(
    spec: GenerationJobSpec,
    job: str,
    namespace: str,
    settings: OperatorSettings,
    *,
    running: bool = True,
) -> list[dict[str, Any]]:
    """The replicas' objects, one per replica: a Deployment each for one node, else a
    LeaderWorkerSet each."""
    render = leader_worker_set if spec.server.multi_node else render_server.deployment
    return [
        render(spec, job, namespace, i, settings, running=running)
        for i in range(spec.server.replicas)
    ]


def endpoints(spec: GenerationJobSpec, job: str, namespace: str) -> list[str]:
    """The URLs the generator balances over: each replica's pod, or its leader."""
    s = spec.server
    if s.multi_node:
        return names.leader_endpoints(job, namespace, s.replicas, s.port)
    return names.server_endpoints(job, namespace, s.replicas, s.port)
