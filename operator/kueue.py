"""Kueue: a GenerationJob that books GPUs for days is admitted by the cluster's queue, not run
around it (issue 30, item 11).

A GenerationJob labelled `kueue.x-k8s.io/queue-name` (and optionally
`kueue.x-k8s.io/priority-class`) passes both labels to the children Kueue's built-in
integrations manage, in the state Kueue expects them:

- the server: each replica's Deployment (Kueue's pod integration: its webhook gates every pod
  with `kueue.x-k8s.io/admission` and lifts the gate on admission; the labels go on the
  Deployment and its pod template) or LeaderWorkerSet (Kueue's LeaderWorkerSet integration);
- the generator's batch Job, created with `suspend: true`: Kueue unsuspends it on admission.

While a server pod is gated or the generator Job is held suspended, the job's phase is `Queued`
with the reason `QueuedByKueue` and where to read Kueue's own (`kubectl get workloads`). The
preflight and download Jobs are short CPU Jobs and carry no queue label. What Kueue decides
(quota, preemption, `waitForPodsReady` eviction) shows only on a cluster running Kueue; the
tests play its webhook and admission in the emulator (tests/operator/emulator/kueue.py).
"""

from __future__ import annotations

from typing import Any

from draftgen.spec import GenerationJobStatus

from .conditions import set_condition
from .phases import Event, enter

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
"""The scheduling gate Kueue's pod webhook puts on the pods it manages until admission."""
REASON = "QueuedByKueue"

_SERVER_KINDS = ("Deployment", "LeaderWorkerSet")


def labels_of(owner: dict[str, Any]) -> dict[str, str]:
    """The Kueue labels of the GenerationJob (none without a queue name)."""
    labels = (owner.get("metadata") or {}).get("labels") or {}
    if not labels.get(QUEUE_LABEL):
        return {}
    return {k: str(labels[k]) for k in (QUEUE_LABEL, PRIORITY_LABEL) if labels.get(k)}


def prepare(obj: dict[str, Any], owner: dict[str, Any]) -> None:
    """Before a child is created: the Kueue labels where Kueue reads them, and a generator Job
    suspended until Kueue admits it. Nothing without a queue name."""
    labels = labels_of(owner)
    kind = obj.get("kind")
    component = ((obj.get("metadata") or {}).get("labels") or {}).get("draftgen.io/component")
    if not labels or not (kind in _SERVER_KINDS or (kind == "Job" and component == "generator")):
        return
    obj["metadata"].setdefault("labels", {}).update(labels)
    if kind == "Deployment":
        template = obj["spec"]["template"].setdefault("metadata", {})
        template.setdefault("labels", {}).update(labels)
    elif kind == "Job":
        obj["spec"]["suspend"] = True


def gated(pod: dict[str, Any]) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(g.get("name") == ADMISSION_GATE for g in gates)


def server_queued(owner: dict[str, Any], pods: list[dict[str, Any]]) -> str | None:
    """Why the server waits for Kueue (a pod still gated), None when it does not."""
    if not labels_of(owner):
        return None
    waiting = sorted(p["metadata"]["name"] for p in pods if gated(p))
    if not waiting:
        return None
    return (
        f"waiting for Kueue to admit the server (LocalQueue {labels_of(owner)[QUEUE_LABEL]}): "
        f"pod {', '.join(waiting)} is gated by {ADMISSION_GATE}; `kubectl get workloads` "
        "shows Kueue's reason"
    )


def generator_queued(owner: dict[str, Any], job: dict[str, Any]) -> str | None:
    """Why the generator Job waits for Kueue (held suspended), None when it does not."""
    if not labels_of(owner) or not (job.get("spec") or {}).get("suspend"):
        return None
    return (
        f"waiting for Kueue to admit the generator Job {job['metadata']['name']} (LocalQueue "
        f"{labels_of(owner)[QUEUE_LABEL]}); `kubectl get workloads` shows Kueue's reason"
    )


def mark_queued(
    status: GenerationJobStatus,
    message: str,
    gen: int | None,
    now: str,
    condition: str = "ServerReady",
) -> None:
    """Phase Queued, the message, and Kueue's reason on the waiting part's condition."""
    enter(status, Event.QUEUED)
    status.message = message
    set_condition(status.conditions, condition, False, REASON, message, gen, now)
