"""Kueue's behaviour, played against the emulator (no Kueue runs here), as its built-in
integrations behave (Kueue 0.10+):

- its pod webhook (the pod integration, which Deployments and LeaderWorkerSets go through) puts
  the scheduling gate `kueue.x-k8s.io/admission` on every pod labelled with a queue name, so the
  pod is created but never scheduled until admission;
- its Job webhook holds a batch Job labelled with a queue name suspended (`spec.suspend: true`);
- admission lifts the gate from the workload's pods, or sets the Job's `suspend` to false.

What it does not play: quota, flavors, priorities, preemption, `waitForPodsReady` eviction: a
cluster running Kueue shows those (docs/operator.md, "Kueue")."""

from __future__ import annotations

from typing import Any

ADMISSION_GATE = "kueue.x-k8s.io/admission"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
CORE, BATCH = "/api/v1", "/apis/batch/v1"


def webhook_pod(emu: Any, namespace: str, name: str, labels: dict[str, str]) -> dict:
    """A pod created from a template with these labels, as Kueue's pod webhook admits it."""
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if labels.get(QUEUE_LABEL):
        spec["schedulingGates"] = [{"name": ADMISSION_GATE}]
    return emu.create(
        CORE,
        "pods",
        namespace,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": spec,
            "status": {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "SchedulingGated",
                        "message": "Scheduling is blocked due to non-empty scheduling gates",
                    }
                ],
            },
        },
    )


def admit_pod(emu: Any, namespace: str, name: str) -> None:
    """Kueue admitted the pod's workload: the gate goes (the scheduler takes over)."""
    emu.patch(CORE, "pods", namespace, name, {"spec": {"schedulingGates": []}})


def admit_job(emu: Any, namespace: str, name: str) -> None:
    """Kueue admitted the Job's workload: it unsuspends the Job."""
    emu.patch(BATCH, "jobs", namespace, name, {"spec": {"suspend": False}})
