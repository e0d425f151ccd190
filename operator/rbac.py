"""Exactly the API access the operator uses, as Kubernetes PolicyRules, in each way it runs.

The Helm chart's RBAC (charts/draftgen/templates/rbac.yaml) holds these rules and is tested
against them in every mode (tests/chart/test_rbac.py), and the rules are tested against what
the operator really calls on the test API server, per mode (tests/operator/test_rbac_modes.py):
all namespaces, chosen namespaces (`watchNamespaces`), the admission webhook on.

- `NAMESPACED_RULES` always: a Role and RoleBinding in each namespace the operator serves (the
  chart's default: the release's namespace), bound cluster-wide only with `clusterWide`;
- `ALL_NAMESPACES_RULES` (cluster-scoped) when it watches every namespace: kopf's cluster-wide
  peering and its scanning of CRDs;
- `WATCHED_NAMESPACES_RULES` (namespaced) when it watches chosen namespaces: kopf's peering in
  each of them. With exact namespace names kopf scans nothing (`settings.scanning.disabled`),
  so neither namespaces nor CRDs are read;
- `WEBHOOK_RULES` (cluster-scoped) when the admission webhook is on;
- `SECRET_LABEL_RULES` (namespaced) when the policy marks usable Secrets by a label
  (`policy.secretLabel`, operator/policy.py);
- `LEADER_WORKER_SET_RULES` (namespaced) when multi-node servers are on
  (`operator.leaderWorkerSet.enabled`): a LeaderWorkerSet per replica. Whether its CRD is
  installed is read from API discovery, which needs no rule.

Deliberately not granted: `update` (kopf and the operator patch), `get` on the peerings (kopf
lists and watches them), the legacy `zalando.org` peering group (kopf uses whichever peering
CRDs are installed; the chart installs `kopf.dev`'s: a cluster that also has zalando.org's
must grant those too), `namespaces` (kopf lists them only for glob patterns, which
`watchNamespaces` does not accept), `events.k8s.io` (kopf posts core v1 Events).
"""

from __future__ import annotations

Rule = dict[str, list[str]]

NAMESPACED_RULES: list[Rule] = [
    # The resource itself: kopf lists, watches and patches it (finalizer, progress), the
    # reconcile reads it fresh and patches its status, the TTL deletes it.
    {
        "apiGroups": ["draftgen.io"],
        "resources": ["generationjobs"],
        "verbs": ["get", "list", "watch", "patch", "delete"],
    },
    {"apiGroups": ["draftgen.io"], "resources": ["generationjobs/status"], "verbs": ["patch"]},
    # Children carry owner references with blockOwnerDeletion (kopf.adopt): where the
    # OwnerReferencesPermissionEnforcement admission plugin is on (OpenShift), setting it needs
    # update on the owner's finalizers. No request uses it: only admission checks it.
    {"apiGroups": ["draftgen.io"], "resources": ["generationjobs/finalizers"], "verbs": ["update"]},
    # The server: a Deployment per replica (created, scaled, rolled, torn down) and a headless
    # Service.
    {
        "apiGroups": ["apps"],
        "resources": ["deployments"],
        "verbs": ["get", "list", "create", "patch", "delete"],
    },
    {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "create", "delete"]},
    # The server's NetworkPolicy: created with the server, put back when edited (a patch),
    # deleted with it.
    {
        "apiGroups": ["networking.k8s.io"],
        "resources": ["networkpolicies"],
        "verbs": ["get", "create", "patch", "delete"],
    },
    # The generator: its job document and its Job.
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "patch", "delete"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "create", "delete"]},
    # Pods are only listed (by label): restarts, OOM kills, scheduling, addresses for metrics.
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    # Events about each GenerationJob (operator/events.py, through kopf: core v1).
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
]

ALL_NAMESPACES_RULES: list[Rule] = [
    # kopf's peering between operator replicas (keep-alives are patches of the peering).
    {
        "apiGroups": ["kopf.dev"],
        "resources": ["clusterkopfpeerings"],
        "verbs": ["list", "watch", "patch"],
    },
    # kopf's scanning: it watches CRDs to notice the GenerationJob CRD being (re)installed.
    {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": ["list", "watch"],
    },
]

WATCHED_NAMESPACES_RULES: list[Rule] = [
    # kopf's peering in each watched namespace.
    {"apiGroups": ["kopf.dev"], "resources": ["kopfpeerings"], "verbs": ["list", "watch", "patch"]},
]

SECRET_LABEL_RULES: list[Rule] = [
    # policy.secretLabel: the Secrets carrying the label are listed and watched, each request
    # with that label selector and in one job's namespace (operator/secret_cache.py), and a
    # job's token Secret is checked against that cache: no poll, and unlabelled Secrets never
    # reach the operator. Granted only in that mode: otherwise no Secret is ever read.
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list", "watch"]},
]

LEADER_WORKER_SET_RULES: list[Rule] = [
    # Multi-node servers: a LeaderWorkerSet per replica, created, scaled, rolled, torn down
    # like the single-node Deployments (their pods are listed by the pods rule).
    {
        "apiGroups": ["leaderworkerset.x-k8s.io"],
        "resources": ["leaderworkersets"],
        "verbs": ["get", "list", "create", "patch", "delete"],
    },
]

WEBHOOK_CONFIGURATION = "draftgen.io"
"""Name of the webhook configurations kopf manages (`settings.admission.managed`)."""

WEBHOOK_RULES: list[Rule] = [
    # kopf creates both configurations (try-and-ignore-409: a create cannot be limited to a
    # name) and patches its webhooks in: the mutating one too, left empty (no mutating handler).
    {
        "apiGroups": ["admissionregistration.k8s.io"],
        "resources": ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
        "verbs": ["create"],
    },
    {
        "apiGroups": ["admissionregistration.k8s.io"],
        "resources": ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
        "resourceNames": [WEBHOOK_CONFIGURATION],
        "verbs": ["patch"],
    },
]


def cluster_rules(*, all_namespaces: bool, webhook: bool) -> list[Rule]:
    """Cluster-scoped rules (the chart's `<fullname>-operator-cluster` ClusterRole)."""
    return (ALL_NAMESPACES_RULES if all_namespaces else []) + (WEBHOOK_RULES if webhook else [])


def namespaced_rules(
    *, all_namespaces: bool, secret_label: bool = False, leader_worker_set: bool = False
) -> list[Rule]:
    """Namespaced rules (the chart's `<fullname>-operator` Role, or ClusterRole when
    cluster-wide)."""
    return (
        NAMESPACED_RULES
        + ([] if all_namespaces else WATCHED_NAMESPACES_RULES)
        + (SECRET_LABEL_RULES if secret_label else [])
        + (LEADER_WORKER_SET_RULES if leader_worker_set else [])
    )


def rules(
    *,
    all_namespaces: bool = True,
    webhook: bool = False,
    secret_label: bool = False,
    leader_worker_set: bool = False,
) -> list[Rule]:
    """Every rule the operator needs in this mode."""
    return cluster_rules(all_namespaces=all_namespaces, webhook=webhook) + namespaced_rules(
        all_namespaces=all_namespaces,
        secret_label=secret_label,
        leader_worker_set=leader_worker_set,
    )


RULES: list[Rule] = rules(all_namespaces=False)
"""The chart's default: the release's namespace (a Role), no webhook."""
