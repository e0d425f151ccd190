"""The SGLang server as Kubernetes objects: pure functions of a validated spec.

Why one Deployment per replica (`replicas: 1` each) and not a StatefulSet:
- Each replica is an independent data-parallel copy of the model (tensor parallel *inside* the
  pod), so there is no rank order to keep and no per-pod volume to claim: the StatefulSet's two
  features buy nothing here.
- A StatefulSet whose pod crash-loops on a bad template does not roll forward until that pod is
  deleted by hand ("forced rollback"); separate Deployments with `strategy: Recreate` replace the
  pod on every change, and a GPU pod never waits for a surge pod that cannot be scheduled (a
  RollingUpdate would ask for a second set of 8 GPUs).
- Per-pod DNS still exists: each pod sets `hostname: <job>-server-<n>` and
  `subdomain: <job>-server`, and the headless Service `<job>-server` publishes
  `<job>-server-<n>.<job>-server.<ns>.svc` for every ready pod, so the generator balances over
  stable per-replica URLs that survive pod restarts.
Multi-node tensor parallelism (one model over several nodes, `nodesPerReplica` > 1) is a
LeaderWorkerSet per replica instead (render/leaderworkerset.py), built from the same pod template.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from draftgen.contract.model_location import is_hub, loader_name
from draftgen.contract.sglang_flags import SGLangFlag as F
from draftgen.spec import GenerationJobSpec

from .. import names
from ..settings import OperatorSettings
from . import hardening
from . import volumes as volumes_
from .model_volume import downloads, volume_path

HOME = "/home/sglang"
METRICS_PATH = "/metrics"
PROBE_PERIOD_SECONDS = 10
# SGLang's /health_generate waits up to SGLANG_HEALTH_CHECK_TIMEOUT (20 s) for one token.
HEALTH_GENERATE_TIMEOUT_SECONDS = 30


def server_args(spec: GenerationJobSpec) -> list[str]:
    """`python3 -m sglang.launch_server` arguments for the spec; each flag from one spec field."""
    s = spec.server
    args = [
        F.MODEL_PATH,
        # hf:// weights the download Job put on the models volume are read from there.
        volume_path(spec) if downloads(spec) else loader_name(spec.model.weights),
        F.HOST,
        "0.0.0.0",
        F.PORT,
        str(s.port),
        F.TP_SIZE,
        str(s.tensor_parallel_size),
    ]
    # SGLang 0.5.23's spelling (the older `--enable-dp-attention --dp-size d` is rewritten to it);
    # left out at 1, SGLang's default, so a plain TP server's command line is unchanged.
    if s.attention_data_parallel_size > 1:
        args += [F.ATTN_DP_SIZE, str(s.attention_data_parallel_size)]
    if s.decode_context_parallel_size > 1:
        args += [F.DCP_SIZE, str(s.decode_context_parallel_size)]
    args += [
        F.MEM_FRACTION_STATIC,
        str(s.mem_fraction_static),
        F.KV_CACHE_DTYPE,
        s.kv_cache_dtype,
        F.SCHEDULE_CONSERVATIVENESS,
        str(spec.schedule_conservativeness),
        F.ENABLE_METRICS,
    ]
    if spec.model.tokenizer:
        args += [F.TOKENIZER_PATH, loader_name(spec.model.tokenizer)]
    if spec.model.trust_remote_code:
        args.append(F.TRUST_REMOTE_CODE)
    if s.hierarchical_cache.enabled:
        # --hicache-size is GB of host memory *per tensor-parallel rank* (validated in the spec).
        args += [
            F.ENABLE_HIERARCHICAL_CACHE,
            F.HICACHE_SIZE,
            str(s.hierarchical_cache.size_gb_per_rank),
        ]
    if s.max_running_requests is not None:
        args += [F.MAX_RUNNING_REQUESTS, str(s.max_running_requests)]
    if s.chunked_prefill_size is not None:
        args += [F.CHUNKED_PREFILL_SIZE, str(s.chunked_prefill_size)]
    if s.context_length is not None:
        args += [F.CONTEXT_LENGTH, str(s.context_length)]
    args += list(s.extra_args)
    return [str(a) for a in args]  # plain str, not enum members: YAML dumps only plain str


def _env(spec: GenerationJobSpec) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        # /health must be a cheap liveness check; /health_generate (readiness) still generates.
        {"name": "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", "value": "0"},
        # Writable paths are given explicitly: the root filesystem is read-only.
        {"name": "HOME", "value": HOME},
        {"name": "XDG_CACHE_HOME", "value": f"{HOME}/.cache"},
        {"name": "HF_HOME", "value": f"{HOME}/.cache/huggingface"},
        {"name": "TRITON_CACHE_DIR", "value": f"{HOME}/.cache/triton"},
        {"name": "TORCHINDUCTOR_CACHE_DIR", "value": f"{HOME}/.cache/torchinductor"},
        {"name": "TMPDIR", "value": "/tmp"},
    ]
    if not is_hub(spec.model.weights) or downloads(spec):
        env.append({"name": "HF_HUB_OFFLINE", "value": "1"})
    return env + hardening.hf_token_env(spec)


def _resources(spec: GenerationJobSpec) -> dict[str, Any]:
    res = json.loads(json.dumps(spec.server.resources or {}))
    gpus = str(spec.server.gpus)
    res.setdefault("limits", {})["nvidia.com/gpu"] = gpus
    res.setdefault("requests", {})["nvidia.com/gpu"] = gpus
    if spec.server.hicache_total_gb and "memory" not in res["requests"]:
        # The hierarchical cache pins this much host memory up front (all ranks together):
        # tell the scheduler, so the pod never lands on a node that cannot hold it.
        res["requests"]["memory"] = f"{spec.server.hicache_total_gb}G"
    return res


def _probe(path: str, *, period: int, timeout: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "http"},
        "periodSeconds": period,
        "timeoutSeconds": timeout,
        "failureThreshold": failures,
    }


def pod_template(
    spec: GenerationJobSpec, job: str, replica: int, settings: OperatorSettings
) -> dict[str, Any]:
    """The server pod template of one replica."""
    s = spec.server
    startup_failures = math.ceil(settings.server_startup_seconds / PROBE_PERIOD_SECONDS)
    mounts: list[dict[str, Any]] = [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "home", "mountPath": HOME},
    ]
    volumes: list[dict[str, Any]] = [
        # NCCL between the TP ranks uses shared memory; the container default is 64 MiB.
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": s.shm_size}},
        {"name": "tmp", "emptyDir": {"sizeLimit": "8Gi"}},
        {"name": "home", "emptyDir": {"sizeLimit": "16Gi"}},
    ]
    model = volumes_.model_claim(spec)
    if model is not None:
        mounts.append(model[0])
        volumes.append(model[1])
    container = {
        "name": names.SERVER_CONTAINER,
        "image": s.image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-m", "sglang.launch_server"],
        "args": server_args(spec),
        "env": _env(spec),
        "ports": [{"name": "http", "containerPort": s.port, "protocol": "TCP"}],
        "resources": _resources(spec),
        # Loading a 1T-parameter model takes 10–30 minutes: liveness and readiness start only
        # after this probe passes, and it allows `serverStartupSeconds`.
        "startupProbe": _probe(
            "/health_generate",
            period=PROBE_PERIOD_SECONDS,
            timeout=HEALTH_GENERATE_TIMEOUT_SECONDS,
            failures=startup_failures,
        ),
        # Ready = can actually generate a token (it returns at once while requests are running).
        "readinessProbe": _probe(
            "/health_generate", period=30, timeout=HEALTH_GENERATE_TIMEOUT_SECONDS, failures=3
        ),
        # Alive = the HTTP server answers; no generation, so a busy server is never restarted.
        "livenessProbe": _probe("/health", period=30, timeout=10, failures=5),
        # On a crash the last log lines (e.g. "CUDA out of memory") reach the pod status.
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": mounts,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
    }
    pod_security: dict[str, Any] = {"seccompProfile": {"type": "RuntimeDefault"}}
    if settings.run_as_user:
        # No fsGroup: the model volume is read-only and emptyDirs are world-writable, so the
        # kubelet never has to walk (chown) hundreds of GB of weights at pod start.
        pod_security.update(
            runAsNonRoot=True, runAsUser=settings.run_as_user, runAsGroup=settings.run_as_user
        )
    pod_spec: dict[str, Any] = {
        "hostname": names.server_name(job, replica),
        "subdomain": names.service_name(job),
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "terminationGracePeriodSeconds": 60,
        "securityContext": pod_security,
        "containers": [container],
        "volumes": volumes,
    }
    if s.node_selector:
        pod_spec["nodeSelector"] = dict(s.node_selector)
    if s.tolerations:
        pod_spec["tolerations"] = [dict(t) for t in s.tolerations]
    return {
        "metadata": {
            "labels": replica_labels(job, replica),
            "annotations": {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": str(s.port),
                "prometheus.io/path": METRICS_PATH,
            },
        },
        "spec": pod_spec,
    }


def template_hash(template: dict[str, Any]) -> str:
    """A short stable hash of a pod template: a changed server spec changes it."""
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:16]


def replica_metadata(job: str, namespace: str, replica: int, digest: str) -> dict[str, Any]:
    """`metadata` of one server replica's object (a Deployment or a LeaderWorkerSet): its name,
    the replica's labels, and the hash of what it runs (a change rolls it)."""
    return {
        "name": names.server_name(job, replica),
        "namespace": namespace,
        "labels": replica_labels(job, replica),
        "annotations": {names.SERVER_HASH_ANNOTATION: digest},
    }


def replica_labels(job: str, replica: int) -> dict[str, str]:
    return names.labels(job, "server", **{names.REPLICA_LABEL: str(replica)})


def deployment(
    spec: GenerationJobSpec,
    job: str,
    namespace: str,
    replica: int,
    settings: OperatorSettings,
    *,
    running: bool = True,
) -> dict[str, Any]:
    """Deployment `<job>-server-<replica>`: one pod, `replicas: 0` when suspended."""
    template = pod_template(spec, job, replica, settings)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": replica_metadata(job, namespace, replica, template_hash(template)),
        "spec": {
            "replicas": 1 if running else 0,
            # Never two GPU pods of one replica at once: a surge pod could not be scheduled.
            "strategy": {"type": "Recreate"},
            # Loading may take the whole startup allowance; don't mark the rollout stalled sooner.
            "progressDeadlineSeconds": settings.server_startup_seconds + 600,
            "revisionHistoryLimit": 2,
            "selector": {
                "matchLabels": names.selector(job, "server", **{names.REPLICA_LABEL: str(replica)})
            },
            "template": template,
        },
    }


def service(spec: GenerationJobSpec, job: str, namespace: str) -> dict[str, Any]:
    """Headless Service: a DNS name per ready server pod, no load balancing in between."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": names.service_name(job),
            "namespace": namespace,
            "labels": names.labels(job, "server"),
        },
        "spec": {
            "clusterIP": "None",
            # A multi-node group serves HTTP from its leader only (render/leaderworkerset.py).
            "selector": names.selector(
                job,
                "server",
                **({names.ROLE_LABEL: names.LEADER_ROLE} if spec.server.multi_node else {}),
            ),
            "ports": [
                {"name": "http", "port": spec.server.port, "targetPort": "http", "protocol": "TCP"}
            ],
            "publishNotReadyAddresses": False,
        },
    }
