"""The LeaderWorkerSet v1 API (leaderworkerset.x-k8s.io/v1) as a strict JSON schema, written by
hand from the API's Go types (kubernetes-sigs/lws `api/leaderworkerset/v1/leaderworkerset_types.go`:
LeaderWorkerSetSpec, LeaderWorkerTemplate, RolloutStrategy, RollingUpdateConfiguration,
NetworkConfig, SubGroupPolicy and their enums). No CRD is downloaded into the repository: the
pod templates inside are checked separately against Kubernetes' own PodTemplateSpec schema
(`validate_leader_worker_set`). Unknown fields fail, as the API server's pruning would drop them
silently."""

from __future__ import annotations

from typing import Any

import jsonschema
import kubernetes_validate

_INT_OR_STRING = {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]}
_POD_TEMPLATE = {"type": "object"}  # checked by kubernetes-validate below

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "leaderworkerset.x-k8s.io/v1"},
        "kind": {"const": "LeaderWorkerSet"},
        "metadata": {
            "type": "object",
            "additionalProperties": False,
            "required": ["name", "namespace"],
            "properties": {
                "name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
                "namespace": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["leaderWorkerTemplate"],
            "properties": {
                "replicas": {"type": "integer", "minimum": 0},
                "startupPolicy": {"enum": ["LeaderCreated", "LeaderReady"]},
                "rolloutStrategy": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["type"],
                    "properties": {
                        "type": {"enum": ["RollingUpdate"]},
                        "rollingUpdateConfiguration": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "partition": {"type": "integer", "minimum": 0},
                                "maxUnavailable": _INT_OR_STRING,
                                "maxSurge": _INT_OR_STRING,
                            },
                        },
                    },
                },
                "networkConfig": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["subdomainPolicy"],
                    "properties": {"subdomainPolicy": {"enum": ["Shared", "UniquePerReplica"]}},
                },
                "leaderWorkerTemplate": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["workerTemplate"],
                    "properties": {
                        "leaderTemplate": _POD_TEMPLATE,
                        "workerTemplate": _POD_TEMPLATE,
                        "size": {"type": "integer", "minimum": 1},
                        "restartPolicy": {"enum": ["Default", "RecreateGroupOnPodRestart", "None"]},
                        "subGroupPolicy": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "subGroupPolicyType": {"enum": ["LeaderWorker", "LeaderExcluded"]},
                                "subGroupSize": {"type": "integer", "minimum": 1},
                            },
                        },
                        "volumeClaimTemplates": {"type": "array"},
                        "persistentVolumeClaimRetentionPolicy": {"type": "object"},
                    },
                },
            },
        },
    },
}


def validate_leader_worker_set(obj: dict[str, Any], kubernetes_version: str = "1.30") -> None:
    """Raise if `obj` is not a LeaderWorkerSet the v1 API accepts: its own fields against
    SCHEMA, each pod template against Kubernetes' PodTemplateSpec (strict)."""
    jsonschema.validate(obj, SCHEMA)
    lwt = obj["spec"]["leaderWorkerTemplate"]
    for key in ("leaderTemplate", "workerTemplate"):
        if key in lwt:
            kubernetes_validate.validate(
                {
                    "apiVersion": "v1",
                    "kind": "PodTemplate",
                    "metadata": {"name": f"{obj['metadata']['name']}-{key.lower()}"},
                    "template": lwt[key],
                },
                kubernetes_version,
                strict=True,
            )
