"""The kinds this emulator serves: the built-in ones the operator uses, the GenerationJob with its
`status` subresource, and those kopf manages where a real server serves them."""

from __future__ import annotations

RESOURCES = {
    "v1/pods": dict(kind="Pod", namespaced=True, subresources={"status"}),
    "v1/services": dict(kind="Service", namespaced=True, subresources={"status"}),
    "v1/configmaps": dict(kind="ConfigMap", namespaced=True),
    "v1/secrets": dict(kind="Secret", namespaced=True),
    "networking.k8s.io/v1/networkpolicies": dict(kind="NetworkPolicy", namespaced=True),
    "v1/events": dict(kind="Event", namespaced=True),
    "v1/namespaces": dict(kind="Namespace", namespaced=False),
    "apps/v1/deployments": dict(
        kind="Deployment", namespaced=True, subresources={"status", "scale"}
    ),
    "batch/v1/jobs": dict(kind="Job", namespaced=True, subresources={"status"}),
    "apiextensions.k8s.io/v1/customresourcedefinitions": dict(
        kind="CustomResourceDefinition", namespaced=False
    ),
    "admissionregistration.k8s.io/v1/validatingwebhookconfigurations": dict(
        kind="ValidatingWebhookConfiguration", namespaced=False
    ),
    # A real server serves it, so kopf's webhook management creates one too (it did not
    # here while the emulator lacked it, and the operator crash-looped on a real cluster).
    "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations": dict(
        kind="MutatingWebhookConfiguration", namespaced=False
    ),
    "kopf.dev/v1/clusterkopfpeerings": dict(kind="ClusterKopfPeering", namespaced=False),
    "kopf.dev/v1/kopfpeerings": dict(kind="KopfPeering", namespaced=True),
    "draftgen.io/v1alpha1/generationjobs": dict(
        kind="GenerationJob",
        singular="generationjob",
        namespaced=True,
        shortnames={"gj"},
        subresources={"status"},
    ),
}
VERBS = {"get", "list", "watch", "create", "patch", "update", "delete"}
