"""What every pod the operator renders shares: the Hugging Face token's one way in, and the
hardening of the pods that run the draftgen image (generator, preflight, model download)."""

from __future__ import annotations

from typing import Any

from draftgen.spec import GenerationJobSpec

# draftgen's image runs with a read-only root: everything it writes goes under /tmp.
DRAFTGEN_ENV: tuple[dict[str, str], ...] = (
    {"name": "HOME", "value": "/tmp"},
    {"name": "HF_HOME", "value": "/tmp/huggingface"},
    {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
)


def hf_token_env(spec: GenerationJobSpec) -> list[dict[str, Any]]:
    """`HF_TOKEN` from the job's Secret, if it names one."""
    secret = spec.model.hf_token_secret
    if secret is None:
        return []
    # The token only ever travels as a secretKeyRef: never in args, the spec or the status.
    ref = {"secretKeyRef": {"name": secret.name, "key": secret.key}}
    return [{"name": "HF_TOKEN", "valueFrom": ref}]


def container_security() -> dict[str, Any]:
    """A draftgen container: unprivileged, no capabilities, read-only root."""
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
    }


def pod_security(uid: int) -> dict[str, Any]:
    """A draftgen Job's pod, as user and group `uid`."""
    return {
        "runAsNonRoot": True,
        "runAsUser": uid,
        "runAsGroup": uid,
        # A writable claim (the output, the models volume for a download) becomes writable for
        # the pod's group; the kubelet re-owns it only if its root does not match (not every file
        # on every retry).
        "fsGroup": uid,
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": {"type": "RuntimeDefault"},
    }
