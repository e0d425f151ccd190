"""Validation of a GenerationJob as the operator sees it, and the same as an admission webhook.

`check(name, spec, settings)` is what every reconcile runs first: the typed rules of
`draftgen.spec` (the very ones `draftgen validate` applies) plus the few that only matter in a
cluster (output and inputs must live on claims, local weights need a volume). A rejected spec is
reported in `status` (phase Failed, condition SpecValid=False, reason InvalidSpec, message naming
each field and its fix); editing the spec re-runs the check.

The webhook refuses the same specs at `kubectl apply` time. It is off by default; enable it with
`DRAFTGEN_OPERATOR_WEBHOOK=1` (Helm: `operator.webhook.enabled`): kopf then serves HTTPS on
`DRAFTGEN_OPERATOR_WEBHOOK_PORT` and manages a ValidatingWebhookConfiguration named
`draftgen.io` pointing at it through the webhook's Service (operator/webhook.py; see
docs/operator.md for certificates). It judges creates and spec changes only: metadata edits and
an object being deleted always pass.

The admin's policy (operator/policy.py: allowed images, claims, Secrets) is part of `check`, so
it is applied at admission and at every reconcile alike.
"""

from __future__ import annotations

from typing import Any

from draftgen.contract.dataset_location import is_hub_dataset
from draftgen.contract.model_location import is_hub
from draftgen.spec import GenerationJobSpec, SpecError, parse_spec

from .kube import Kube
from .pod_rules import pod_problems
from .policy import policy_problems, secret_problems
from .settings import OperatorSettings, effective_spec


def cluster_problems(spec: GenerationJobSpec) -> list[str]:
    """Rules that hold only when the operator runs the job (a local run may skip the claims)."""
    problems = []
    if not spec.output.claim_name:
        problems.append(
            "spec.output.claimName: required in a cluster; without a PersistentVolumeClaim the "
            "records would be written inside the pod and lost with it; set it to a claim name"
        )
    if not spec.inputs.claim_name:
        problems.append(
            "spec.inputs.claimName: required in a cluster; dataset sources are read from this "
            "PersistentVolumeClaim (mounted read-only at spec.inputs.mountPath)"
        )
    if spec.model.volume is None and not is_hub(spec.model.weights):
        problems.append(
            f"spec.model.volume: required for the local weights path {spec.model.weights!r}; "
            "give the claim holding the weights, or use hf://ORG/NAME weights"
        )
    if spec.model.volume is None and is_hub(spec.model.weights):
        problems.append(
            f"spec.model.volume: required for the hub weights {spec.model.weights!r} in a "
            "cluster; the operator downloads them into this PersistentVolumeClaim first (a "
            "1T-parameter model is about 600 GB, more than a pod's disk): set "
            "model.volume: {claimName: <a claim of that size>, mountPath: /models}"
        )
    for i, ds in enumerate(spec.datasets):
        if is_hub_dataset(ds.source):
            problems.append(
                f"spec.datasets[{i}]({ds.name}).source: {ds.source} is read from a local hub "
                "cache, which the generator pod has none of; copy the dataset (its snapshot or "
                "save_to_disk directory) onto the inputs volume and name that directory"
            )
    return problems + pod_problems(spec)


def check(
    name: str, spec: dict[str, Any] | None, settings: OperatorSettings
) -> tuple[GenerationJobSpec | None, list[str]]:
    """(the parsed spec with the operator's defaults, []) or (None, one message per problem)."""
    try:
        parsed = parse_spec(effective_spec(spec or {}, settings), name=name)
    except SpecError as err:
        return None, [
            p if p.startswith(("spec", "metadata")) else f"spec.{p}" for p in err.problems
        ]
    problems = cluster_problems(parsed) + policy_problems(parsed, settings)
    return (None, problems) if problems else (parsed, [])


def admission_problems(
    body: dict[str, Any], settings: OperatorSettings, kube: Kube | None = None
) -> list[str]:
    """What the webhook refuses: spec problems (the policy's included, its secret label too when
    `kube` is given), and names too long for the children."""
    meta = body.get("metadata") or {}
    name = meta.get("name") or "job"
    problems = []
    from draftgen.spec.job import JOB_NAME_MAX

    if len(name) > JOB_NAME_MAX:
        problems.append(
            f"metadata.name: {name!r} is longer than {JOB_NAME_MAX} characters; "
            "children are named <name>-server-<n>: choose a shorter name"
        )
    parsed, spec_problems = check(name[:JOB_NAME_MAX], body.get("spec"), settings)
    problems += spec_problems
    if parsed is not None and kube is not None:
        problems += secret_problems(kube, parsed, meta.get("namespace") or "default", settings)
    return problems


_registered = False


def register_webhook(settings: OperatorSettings, kube: Kube | None = None) -> None:
    """Register the validating admission handler with kopf (called only when enabled; once)."""
    global _registered
    if _registered:
        return
    _registered = True
    import kopf

    from draftgen.spec import GROUP, PLURAL, VERSION

    @kopf.on.validate(
        GROUP, VERSION, PLURAL, id="generationjob-spec", operations=["CREATE", "UPDATE"]
    )
    def validate_generationjob(
        body: Any, operation: str | None = None, old: Any = None, **_: Any
    ) -> None:
        from .webhook import needs_validation

        if not needs_validation(operation, old, body):
            return  # metadata only, or being deleted (operator/webhook.py)
        problems = admission_problems(dict(body), settings, kube)
        if problems:
            raise kopf.AdmissionError("GenerationJob is invalid: " + "; ".join(problems), code=422)
