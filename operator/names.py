"""Names and labels of everything the operator creates for a GenerationJob.

Children are found by name (deterministic, so a restarted operator finds what it created) and
carry labels naming the job, so
`kubectl get deployments,services,jobs,configmaps,networkpolicies,pods -l draftgen.io/job=<name>`
shows them all (`kubectl get all` leaves out ConfigMaps and NetworkPolicies).
"""

from __future__ import annotations

JOB_LABEL = "draftgen.io/job"
COMPONENT_LABEL = "draftgen.io/component"
REPLICA_LABEL = "draftgen.io/replica"
MANAGED_BY = {"app.kubernetes.io/managed-by": "draftgen-operator"}

CONFIG_HASH_ANNOTATION = "draftgen.io/config-hash"
"""On the generator Job: hash of the job document it was started with (a budget edit changes
it, and the generator is restarted; the server is not)."""

SERVER_HASH_ANNOTATION = "draftgen.io/server-hash"
"""On server Deployments: hash of the rendered pod template (only server changes roll it)."""

GENERATION_ANNOTATION = "draftgen.io/generation"
"""On the preflight Job: the GenerationJob's generation it checked (a failed preflight runs
again after any spec edit: the data may have been fixed meanwhile)."""

REVISION_ANNOTATION = "draftgen.io/model-revision"
"""On the model download Job: the repository and revision it fetches (a new one restarts it)."""

ROLE_LABEL = "draftgen.io/role"
"""On the pods of a multi-node server: `leader` (node rank 0, serves HTTP) or `worker`."""
LEADER_ROLE, WORKER_ROLE = "leader", "worker"

SERVER_CONTAINER = "sglang"
GENERATOR_CONTAINER = "generator"
DOWNLOAD_CONTAINER = "download"
PREFLIGHT_CONTAINER = "preflight"
JOB_FILE_DIR = "/etc/draftgen"
JOB_FILE = f"{JOB_FILE_DIR}/job.yaml"


def server_name(job: str, replica: int) -> str:
    """Deployment (and pod hostname) of one server replica: `<job>-server-<n>`."""
    return f"{job}-server-{replica}"


def service_name(job: str) -> str:
    """The headless Service giving each server pod a DNS name."""
    return f"{job}-server"


def generator_name(job: str) -> str:
    """The generator Job and its ConfigMap."""
    return f"{job}-generator"


def download_name(job: str) -> str:
    """The model download Job (hf:// weights onto the models volume)."""
    return f"{job}-model-download"


def preflight_name(job: str) -> str:
    """The preflight Job (inputs and tokenizer checked before any server)."""
    return f"{job}-preflight"


def labels(job: str, component: str, **extra: str) -> dict[str, str]:
    out = {
        "app.kubernetes.io/name": "draftgen",
        "app.kubernetes.io/component": component,
        **MANAGED_BY,
        JOB_LABEL: job,
        COMPONENT_LABEL: component,
    }
    out.update(extra)
    return out


def selector(job: str, component: str, **extra: str) -> dict[str, str]:
    """The minimal stable subset used in selectors (selectors are immutable on Deployments)."""
    return {JOB_LABEL: job, COMPONENT_LABEL: component, **extra}


def server_endpoints(job: str, namespace: str, replicas: int, port: int) -> list[str]:
    """Per-pod URLs the generator balances over: `<job>-server-<n>.<job>-server.<ns>.svc`."""
    svc = service_name(job)
    return [f"http://{server_name(job, i)}.{svc}.{namespace}.svc:{port}" for i in range(replicas)]


def leader_endpoints(job: str, namespace: str, replicas: int, port: int) -> list[str]:
    """Per-replica URLs of a multi-node server: each LeaderWorkerSet `<job>-server-<n>` names
    its leader pod `<job>-server-<n>-0` in its own headless Service `<job>-server-<n>`."""
    return [
        f"http://{server_name(job, i)}-0.{server_name(job, i)}.{namespace}.svc:{port}"
        for i in range(replicas)
    ]
