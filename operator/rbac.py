"""Exactly the API access the operator uses, as Kubernetes PolicyRules.

The Helm chart's ClusterRole is rendered from (and tested against) these lists: `RULES` always,
`WEBHOOK_RULES` when the admission webhook is enabled. Each rule says why it is there.
"""

from __future__ import annotations

RULES: list[dict[str, list[str]]] = [
    # The resource itself: kopf watches it, patches its finalizer/annotations, the TTL deletes it.
    {
        "apiGroups": ["draftgen.io"],
        "resources": ["generationjobs"],
        "verbs": ["get", "list", "watch", "patch", "update", "delete"],
    },
    {
        "apiGroups": ["draftgen.io"],
        "resources": ["generationjobs/status"],
        "verbs": ["patch", "update"],
    },
    # The server: a Deployment per replica (created, scaled, rolled, torn down) and a headless
    # Service.
    {
        "apiGroups": ["apps"],
        "resources": ["deployments"],
        "verbs": ["get", "list", "create", "patch", "delete"],
    },
    {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "create", "delete"]},
    # The generator: its job document and its Job.
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "patch", "delete"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "create", "delete"]},
    # Pods are only listed (by label): restarts, OOM kills, scheduling, addresses for metrics.
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    # kopf posts Kubernetes events about handler outcomes.
    {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
    # kopf's peering (leader election between operator replicas), both API groups it knows.
    {
        "apiGroups": ["kopf.dev", "zalando.org"],
        "resources": ["clusterkopfpeerings"],
        "verbs": ["get", "list", "watch", "patch"],
    },
    {
        "apiGroups": ["kopf.dev", "zalando.org"],
        "resources": ["kopfpeerings"],
        "verbs": ["get", "list", "watch", "patch"],
    },
    # kopf's scanning: which CRDs exist and which namespaces match.
    {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": ["list", "watch"],
    },
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list", "watch"]},
]

WEBHOOK_RULES: list[dict[str, list[str]]] = [
    # kopf manages the ValidatingWebhookConfiguration `draftgen.io` (`settings.admission.managed`).
    {
        "apiGroups": ["admissionregistration.k8s.io"],
        "resources": ["validatingwebhookconfigurations"],
        "verbs": ["get", "list", "watch", "create", "patch"],
    },
]
