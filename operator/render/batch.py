"""The `batch/v1` Jobs the operator runs (the generator, the model download, the preflight): the
Job, its pod and its failure policy, alike for each.

A Job runs one pod at a time to one completion; each retry is a new pod (`restartPolicy: Never`)
so every failed attempt's logs stay readable with `kubectl logs`. Exit codes that retrying
cannot help fail the Job at once; evictions and preemptions do not use up a retry.
"""

from __future__ import annotations

from typing import Any

from .. import names
from ..settings import OperatorSettings
from . import hardening


def fail_fast_policy(container: str, codes: list[int]) -> dict[str, Any]:
    """`podFailurePolicy`: fail at once on `codes` of `container`; disruptions are not failures."""
    return {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": container, "operator": "In", "values": codes},
            },
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            },
        ]
    }


def pod_template(
    job: str,
    component: str,
    container: dict[str, Any],
    volumes: list[dict[str, Any]],
    settings: OperatorSettings,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One attempt's pod: unprivileged, no service account token, no service links."""
    uid = settings.run_as_user or 1000
    return {
        "metadata": {
            "labels": names.labels(job, component),
            **({"annotations": annotations} if annotations else {}),
        },
        "spec": {
            "restartPolicy": "Never",
            "enableServiceLinks": False,
            "automountServiceAccountToken": False,
            "securityContext": hardening.pod_security(uid),
            "containers": [container],
            "volumes": volumes,
        },
    }


def batch_job(
    name: str,
    namespace: str,
    job: str,
    component: str,
    annotations: dict[str, str],
    retries: int,
    policy: dict[str, Any],
    template: dict[str, Any],
) -> dict[str, Any]:
    """The Job `name` of GenerationJob `job`: one completion, `retries` more pods at most."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": names.labels(job, component),
            "annotations": annotations,
        },
        "spec": {
            "backoffLimit": retries,
            "completions": 1,
            "parallelism": 1,
            "podFailurePolicy": policy,
            "template": template,
        },
    }
