"""Values the chart tests render with: every toggle on and a non-default value everywhere."""

from __future__ import annotations

from typing import Any

import yaml

from .rendering import REPO


def kimi_job() -> dict[str, Any]:
    doc = yaml.safe_load((REPO / "examples" / "kimi-k2.5.yaml").read_text())
    return {
        "name": doc["metadata"]["name"],
        "namespace": doc["metadata"]["namespace"],
        "labels": {"team": "drafters"},
        "spec": doc["spec"],
    }


def full_values() -> dict[str, Any]:
    kimi = kimi_job()
    scaled = {**kimi, "name": "kimi-k25-scaled", "annotations": {"owner": "drafters@example.com"}}
    scaled["spec"] = {
        **kimi["spec"],
        "server": {**kimi["spec"]["server"], "replicas": 3, "gpusPerReplica": 8},
    }
    return {
        "fullnameOverride": "drafts",
        "image": {
            "repository": "registry.example.com/ml/draftgen",
            "tag": "1.2.3",
            "pullPolicy": "Always",
        },
        "imagePullSecrets": [{"name": "registry-creds"}],
        "operator": {
            "replicas": 3,
            "watchNamespaces": ["drafters", "research"],
            "policy": {
                "allowedImagePrefixes": ["lmsysorg/sglang:", "registry.example.com/ml/"],
                "allowChartImages": False,
                "allowedClaims": ["models", "datasets", "drafter-*"],
                "allowedSecrets": ["hf-token"],
                "secretLabel": "draftgen.io/usable=true",
            },
            "networkPolicy": {"monitoringNamespace": "monitoring"},
            "peering": {"name": "drafts-peering", "create": True},
            "metricsPort": 9100,
            "livenessPort": 9101,
            "pollIntervalSeconds": 5,
            "httpTimeoutSeconds": 2.5,
            "handlerThreads": 64,
            "crashLoopRestarts": 5,
            "serverStartupSeconds": 5400,
            "webhook": {"enabled": True, "port": 8443, "certSecret": "draftgen-webhook-tls"},
            "resources": {
                "requests": {"cpu": "200m", "memory": "300Mi"},
                "limits": {"cpu": "1", "memory": "1Gi"},
            },
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [
                {
                    "key": "dedicated",
                    "operator": "Equal",
                    "value": "control",
                    "effect": "NoSchedule",
                }
            ],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "node-role", "operator": "In", "values": ["control"]}
                                ]
                            }
                        ]
                    }
                }
            },
            "priorityClassName": "system-cluster-critical",
            "podAnnotations": {"example.com/scrape": "yes"},
            "podLabels": {"team": "ml-platform"},
            "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}],
        },
        "serviceAccount": {
            "create": True,
            "name": "draftgen-operator",
            "annotations": {"iam.example.com/role": "draftgen"},
        },
        "rbac": {"create": True},
        "serverDefaults": {
            "image": "lmsysorg/sglang:v0.5.6-cu129",
            "tensorParallelSize": 4,
            "gpusPerReplica": 8,
            "memFractionStatic": 0.88,
        },
        "generator": {
            "image": "registry.example.com/ml/draftgen-generator:1.2.3",
            "runAsUser": 20000,
        },
        "monitoring": {
            "serviceMonitor": {"enabled": True, "interval": "15s", "labels": {"release": "kps"}},
            "podMonitors": {
                "interval": "10s",
                "labels": {"release": "kps"},
                "generator": {"enabled": True},
                "sglang": {"enabled": True},
            },
            "prometheusRule": {"enabled": True, "labels": {"release": "kps"}},
            "grafanaDashboard": {
                "enabled": True,
                "namespace": "monitoring",
                "labels": {"grafana_dashboard": "1", "team": "ml"},
                "annotations": {"grafana_folder": "draftgen"},
            },
        },
        "generationJobs": [kimi, scaled],
    }


# Each toggle on its own, so no template depends on another toggle being on.
TOGGLES: dict[str, dict[str, Any]] = {
    "serviceMonitor": {"monitoring": {"serviceMonitor": {"enabled": True}}},
    "podMonitor-generator": {"monitoring": {"podMonitors": {"generator": {"enabled": True}}}},
    "podMonitor-sglang": {"monitoring": {"podMonitors": {"sglang": {"enabled": True}}}},
    "prometheusRule": {"monitoring": {"prometheusRule": {"enabled": True}}},
    "grafanaDashboard": {"monitoring": {"grafanaDashboard": {"enabled": True}}},
    "webhook": {"operator": {"webhook": {"enabled": True, "certSecret": "webhook-tls"}}},
    "one-replica": {"operator": {"replicas": 1}},
    "no-rbac-no-sa": {"rbac": {"create": False}, "serviceAccount": {"create": False}},
    "no-peering-object": {"operator": {"peering": {"create": False}}},
    # In the release's namespace, the one the operator serves by default.
    "generationJobs": {"generationJobs": [{**kimi_job(), "namespace": "draftgen"}]},
}
