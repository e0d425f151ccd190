"""The NetworkPolicy of a job's server pods: who may reach SGLang's port.

SGLang's HTTP port also serves admin endpoints (weight updates, cache flushes, profiling), so
any pod of the namespace reaching it could change what the job generates. The policy admits
only the job's own generator pods, the operator (it reads `/get_server_info`) and Prometheus'
namespace (`/metrics`); everything else is dropped. The port is the container's named port
`http`, so the policy does not change when `spec.server.port` does. The kubelet's probes are not
subject to NetworkPolicies.
"""

from __future__ import annotations

from typing import Any

from .. import names
from ..settings import OperatorSettings

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""Set by the API server on every namespace (Kubernetes 1.21+): selects one namespace by name."""


def policy_name(job: str) -> str:
    return names.service_name(job)


def network_policy(
    job: str, namespace: str, settings: OperatorSettings, *, multi_node: bool = False
) -> dict[str, Any]:
    """NetworkPolicy `<job>-server`: ingress to the server port from the allowed peers only;
    with `multi_node`, the job's server pods also reach each other on every port (the ranks of
    a LeaderWorkerSet group meet at the leader's `--dist-init-addr`, and NCCL picks its ports)."""
    peers: list[dict[str, Any]] = [
        {"podSelector": {"matchLabels": names.selector(job, "generator")}},
    ]
    if settings.operator_namespace:
        peers.append(
            {
                "namespaceSelector": {
                    "matchLabels": {NAMESPACE_NAME_LABEL: settings.operator_namespace}
                },
                "podSelector": {"matchLabels": {"app.kubernetes.io/component": "operator"}},
            }
        )
    if settings.monitoring_namespace:
        peers.append(
            {
                "namespaceSelector": {
                    "matchLabels": {NAMESPACE_NAME_LABEL: settings.monitoring_namespace}
                }
            }
        )
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": policy_name(job),
            "namespace": namespace,
            "labels": names.labels(job, "server"),
        },
        "spec": {
            "podSelector": {"matchLabels": names.selector(job, "server")},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": peers, "ports": [{"port": "http", "protocol": "TCP"}]}]
            + (
                [{"from": [{"podSelector": {"matchLabels": names.selector(job, "server")}}]}]
                if multi_node
                else []
            ),
        },
    }
