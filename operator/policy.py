"""The cluster admin's policy over what a GenerationJob may ask for (issue 21, class 9).

The operator creates pods with its own, cluster-wide permissions, so whoever may write a
GenerationJob could otherwise run any image, mount any claim and inject any Secret of the
namespace into a pod. The chart's `policy` values (env `DRAFTGEN_OPERATOR_ALLOWED_*`,
`DRAFTGEN_OPERATOR_SECRET_LABEL`) restrict that; each rule left empty allows everything:

- `allowedImagePrefixes`: the server and generator images (after the operator's defaults are
  filled in) must start with one of them, e.g. `lmsysorg/sglang:` or `registry.corp/`;
- `allowedClaims`: every PersistentVolumeClaim a job mounts (output, inputs, model) must match
  one of these names or shell-style patterns (`drafter-*`);
- `allowedSecrets` (names or patterns) and `secretLabel` (`key=value`): the Secret given as
  `model.hfTokenSecret` must be named there, or carry that label. The label is checked against
  the labelled Secrets of the job's namespace, kept by a watch (operator/secret_cache.py), at
  admission and at reconcile.

Every refusal names the field, the rule (`policy.<value>`) and what is allowed.
"""

from __future__ import annotations

import fnmatch

from draftgen.spec import GenerationJobSpec

from . import secret_cache
from .kube import Kube
from .settings import OperatorSettings


def _claims(spec: GenerationJobSpec) -> list[tuple[str, str]]:
    out = []
    if spec.output.claim_name:
        out.append(("spec.output.claimName", spec.output.claim_name))
    if spec.inputs.claim_name:
        out.append(("spec.inputs.claimName", spec.inputs.claim_name))
    if spec.model.volume is not None:
        out.append(("spec.model.volume.claimName", spec.model.volume.claim_name))
    return out


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def policy_problems(spec: GenerationJobSpec, settings: OperatorSettings) -> list[str]:
    """The policy rules that need no API call: images, claims, secret names."""
    problems = []
    prefixes = settings.allowed_image_prefixes
    if prefixes:
        images = [
            ("spec.server.image", spec.server.image),
            ("spec.generator.image", spec.generator.image or settings.generator_image),
        ]
        for field, image in images:
            if not any(image.startswith(p) for p in prefixes):
                problems.append(
                    f"{field}: image {image!r} is refused by the operator's policy (rule "
                    f"policy.allowedImagePrefixes: {', '.join(prefixes)}); use an image under "
                    "one of these prefixes, or ask the cluster admin to allow it"
                )
    if settings.allowed_claims:
        for field, claim in _claims(spec):
            if not _matches(claim, settings.allowed_claims):
                problems.append(
                    f"{field}: claim {claim!r} is refused by the operator's policy (rule "
                    f"policy.allowedClaims: {', '.join(settings.allowed_claims)}); use one of "
                    "these claims, or ask the cluster admin to allow it"
                )
    secret = spec.model.hf_token_secret
    # With a label rule, a Secret not named here may still carry the label (secret_problems).
    if (
        secret is not None
        and settings.allowed_secrets
        and not settings.secret_label
        and not _matches(secret.name, settings.allowed_secrets)
    ):
        problems.append(
            f"spec.model.hfTokenSecret.name: Secret {secret.name!r} is refused by the "
            f"operator's policy (rule policy.allowedSecrets: "
            f"{', '.join(settings.allowed_secrets)}); use one of these Secrets, or ask the "
            "cluster admin to allow it"
        )
    return problems


def secret_label(settings: OperatorSettings) -> tuple[str, str] | None:
    """`policy.secretLabel` as (key, value); None when unset."""
    if not settings.secret_label:
        return None
    key, _, value = settings.secret_label.partition("=")
    return key.strip(), value.strip()


def secret_problems(
    kube: Kube, spec: GenerationJobSpec, namespace: str, settings: OperatorSettings
) -> list[str]:
    """`policy.secretLabel`: a token Secret not named in `allowedSecrets` must carry the label
    (checked against the watched cache of the namespace's labelled Secrets, no request of its
    own)."""
    secret = spec.model.hf_token_secret
    label = secret_label(settings)
    if secret is None or label is None or _matches(secret.name, settings.allowed_secrets):
        return []
    key, value = label
    if secret_cache.for_client(kube, key, value).labelled(namespace, secret.name):
        return []
    # Unlabelled Secrets are never read, so a missing one and an unlabelled one look alike.
    why = f"does not exist or does not carry the label {key}={value}"
    return [
        f"spec.model.hfTokenSecret.name: Secret {namespace}/{secret.name} {why}, so the "
        f"operator's policy refuses it (rule policy.secretLabel: {key}={value}); label a Secret "
        f"made for draftgen with `kubectl label secret NAME {key}={value}`"
        + (
            f" or use one of {', '.join(settings.allowed_secrets)}"
            if settings.allowed_secrets
            else ""
        )
    ]
