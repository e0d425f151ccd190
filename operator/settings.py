"""Operator settings: typed, with a docstring per field, read from `DRAFTGEN_OPERATOR_*` env vars so
the Helm chart can set every one of them.

GenerationJobs inherit the server defaults below (image, tensor parallelism, GPUs, memory fraction)
only for fields the job leaves unset: the CRD carries no defaults, so an absent key in the stored
object really is "unset", and a value the user wrote always wins.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Mapping
from typing import Any, get_type_hints

from draftgen.spec.server import ServerSpec

ENV_PREFIX = "DRAFTGEN_OPERATOR_"


@dataclasses.dataclass(frozen=True)
class OperatorSettings:
    """Everything the operator is configured with (env `DRAFTGEN_OPERATOR_<FIELD IN CAPITALS>`)."""

    generator_image: str = "ghcr.io/draftgen/draftgen:0.1.0"
    """Image of the generator Job when `spec.generator.image` is unset: the operator's own image
    (the chart sets it to the image the operator runs from)."""

    server_image: str = ServerSpec.model_fields["image"].default
    """SGLang image when `spec.server.image` is unset."""

    server_tensor_parallel_size: int | None = None
    """`spec.server.tensorParallelSize` for jobs that leave it unset (None: the spec's default)."""

    server_gpus_per_replica: int | None = None
    """`spec.server.gpusPerReplica` for jobs that leave it unset (None: tensorParallelSize)."""

    server_mem_fraction_static: float | None = None
    """`spec.server.memFractionStatic` for jobs that leave it unset (None: the spec's default)."""

    leader_worker_set: bool = False
    """Run multi-node jobs (`spec.server.nodesPerReplica` > 1) as LeaderWorkerSets; needs the
    LeaderWorkerSet controller installed and RBAC for `leaderworkersets` (chart value
    `operator.leaderWorkerSet.enabled` sets both this and the RBAC). Off: such jobs are
    refused with the reason, and no LeaderWorkerSet is ever read."""

    namespaces: tuple[str, ...] = ()
    """Namespaces to watch; empty means all namespaces (cluster-wide)."""

    peering_name: str = "draftgen"
    """kopf peering object name: operators sharing it elect one active instance."""

    standalone: bool = False
    """Run without peering (a single replica, no leader election)."""

    metrics_port: int = 8080
    """Port of the operator's own Prometheus metrics (`/metrics`); 0 disables them."""

    metrics_address: str = "127.0.0.1"
    """Address the metrics server binds to. Loopback by default, so an operator run on a
    workstation exposes nothing; in a pod Prometheus scrapes the pod IP, so the chart sets
    0.0.0.0 (value `operator.metricsAddress`)."""

    liveness_port: int = 8081
    """Port of kopf's liveness endpoint (`/healthz`); 0 disables it."""

    liveness_address: str = "127.0.0.1"
    """Address the liveness endpoint binds to (the kubelet probes the pod IP: the chart sets
    0.0.0.0, value `operator.livenessAddress`)."""

    poll_interval_seconds: float = 15.0
    """How often each job is reconciled: server readiness, generator progress, crash loops."""

    http_timeout_seconds: float = 5.0
    """Timeout for reading the generator's metrics and the server's `/get_server_info`."""

    handler_threads: int = 32
    """Threads running reconciles at once. They mostly wait on the Kubernetes API and on pods
    (a scrape that hangs holds one for `http_timeout_seconds`), so far more than CPUs: with
    kopf's default (CPUs + 4) a few unreachable pods would delay every other job's reconcile."""

    preflight: bool = True
    """Run the preflight Job (every dataset's first rows through the parsers and the tokenizer)
    before creating a job's server; off, the server is created at once (docs/operator.md)."""

    stuck_pod_seconds: int = 1800
    """How long a child's pod (model download, preflight, server, generator) may stay
    unschedulable or unable to pull its image before the job fails with that reason; it is
    reported at once either way. 0: report only, never fail (chart value
    `operator.stuckPodSeconds`)."""

    crash_loop_restarts: int = 3
    """Server container restarts after which the job fails with the crash reason instead of
    waiting forever (a 1T model that OOMs at load would otherwise restart for hours)."""

    server_startup_seconds: int = 3600
    """How long the startup probe lets SGLang load before the kubelet restarts it (Kimi-K2.5's
    ~600 GB of weights take 10–30 minutes; at least 30 minutes is required)."""

    run_as_user: int = 1000
    """UID and GID of the server and generator pods (the chart sets 10001, the draftgen
    image's user). 0 leaves the server's user to its image (an SGLang image that must run as
    root); the generator never runs as root and then takes 1000."""

    allowed_image_prefixes: tuple[str, ...] = ()
    """Policy (operator/policy.py): prefixes the server and generator images must start with;
    empty allows any image (chart value `operator.policy.allowedImagePrefixes`)."""

    allowed_claims: tuple[str, ...] = ()
    """Policy: names or shell patterns of the PersistentVolumeClaims a job may mount; empty
    allows any claim (`operator.policy.allowedClaims`)."""

    allowed_secrets: tuple[str, ...] = ()
    """Policy: names or shell patterns of the Secrets a job may use as its HF token; empty
    (with no `secret_label`) allows any Secret (`operator.policy.allowedSecrets`)."""

    secret_label: str = ""
    """Policy: `key=value` label marking Secrets a job may use (besides `allowed_secrets`);
    checked by reading the Secret (`operator.policy.secretLabel`)."""

    operator_namespace: str = ""
    """Namespace of the operator's pods, admitted to the server port by each job's
    NetworkPolicy (it reads `/get_server_info`); the chart sets the release namespace."""

    monitoring_namespace: str = ""
    """Namespace whose pods (Prometheus) each job's NetworkPolicy admits to the server port;
    empty admits none (`operator.networkPolicy.monitoringNamespace`)."""

    webhook: bool = False
    """Serve the validating admission webhook (see docs/operator.md)."""

    webhook_port: int = 9443
    """Port of the admission webhook server."""

    webhook_address: str = "127.0.0.1"
    """Address the webhook server binds to (the API server connects through the webhook
    Service to the pod IP: the chart sets 0.0.0.0, value `operator.webhook.address`)."""

    webhook_host: str | None = None
    """Host name in the webhook's self-signed certificate (the Service's DNS name); without a
    `webhook_service_name`, also the host of the `url:` the API server is given (which it
    resolves with its own DNS, not the cluster's: no `*.svc` names). None lets kopf detect it."""

    webhook_service_name: str = ""
    """The Service in front of the webhook: registered as a `service:` clientConfig (namespace,
    name, port, path), which the API server reaches through the cluster's Service routing; the
    chart sets `<release>-webhook`. Empty registers a `url:` instead (a webhook outside the
    cluster, or tests)."""

    webhook_service_namespace: str = ""
    """Namespace of that Service (empty: `operator_namespace`)."""

    webhook_service_port: int = 443
    """The Service's port (not the container's): chart value `operator.webhook.servicePort`."""

    webhook_cafile: str | None = None
    """CA bundle (PEM) given to the API server to verify the webhook's certificate, e.g. the
    `ca.crt` of a cert-manager Secret; used only if the file exists, else the certificate
    itself is the bundle (right for a self-signed one)."""

    webhook_certfile: str | None = None
    """TLS certificate of the webhook server (PEM), e.g. mounted from a cert-manager Secret.
    None makes kopf generate a self-signed one, which needs the `certbuilder` package."""

    webhook_pkeyfile: str | None = None
    """TLS private key of the webhook server (PEM)."""

    webhook_insecure: bool = False
    """Serve the webhook over plain HTTP (only behind a TLS-terminating tunnel, or in tests)."""

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> OperatorSettings:
        """Read every field from `DRAFTGEN_OPERATOR_<FIELD>`; unset variables keep the defaults."""
        source: Mapping[str, str] = os.environ if env is None else env
        hints = get_type_hints(cls)
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            raw = source.get(ENV_PREFIX + field.name.upper())
            if raw is None or raw == "":
                continue
            values[field.name] = _convert(field.name, raw, hints[field.name])
        return cls(**values)


def _convert(name: str, raw: str, hint: Any) -> Any:
    text = str(hint)
    try:
        if "tuple" in text:
            return tuple(p.strip() for p in raw.split(",") if p.strip())
        if "bool" in text:
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if "float" in text:
            return float(raw)
        if "int" in text:
            return int(raw)
    except ValueError:
        raise ValueError(
            f"{ENV_PREFIX}{name.upper()}={raw!r}: not a valid {text}; fix the variable "
            "(Helm value operator.*)"
        ) from None
    return raw


# spec.server key → settings field: filled in only when the job leaves the key out.
_SERVER_DEFAULTS = {
    "image": "server_image",
    "tensorParallelSize": "server_tensor_parallel_size",
    "gpusPerReplica": "server_gpus_per_replica",
    "memFractionStatic": "server_mem_fraction_static",
}


def effective_spec(spec: dict[str, Any], settings: OperatorSettings) -> dict[str, Any]:
    """The job's spec with the operator's defaults filled into the fields it leaves unset."""
    out = copy.deepcopy(dict(spec))
    server = dict(out.get("server") or {})
    for key, attr in _SERVER_DEFAULTS.items():
        value = getattr(settings, attr)
        if key == "gpusPerReplica" and (server.get("nodesPerReplica") or 1) != 1:
            continue  # a multi-node replica's pods take gpusPerNode (spec.server)
        if key not in server and value is not None:
            server[key] = value
    out["server"] = server
    generator = dict(out.get("generator") or {})
    if not generator.get("image"):
        generator["image"] = settings.generator_image
    out["generator"] = generator
    return out
