"""Reading the state of the children: pure functions over the API objects.

They turn pod and Job statuses into decisions a person can act on: a server that keeps dying
(and why: out of memory, a crash with its last log lines), a pod that cannot be scheduled, a
generator that ran out of retries.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from draftgen.contract.export_cli import ResultError, parse_results
from draftgen.spec import ExportStatus

from . import names
from .conditions import parse_time

# Words in a crash's termination message that mean the GPU ran out of memory.
_CUDA_OOM = ("out of memory", "outofmemoryerror", "cuda error: out of memory")
_IMAGE_ERRORS = {"ErrImagePull", "ImagePullBackOff", "InvalidImageName"}


@dataclasses.dataclass(frozen=True)
class ServerHealth:
    """What the server pods say about themselves."""

    restarts: int = 0
    failure: tuple[str, str] | None = None
    """(reason, message) when the server will not come up by itself: the job fails."""
    waiting: tuple[str, str] | None = None
    """(reason, message) for a server that is not ready yet but may still become ready."""
    waiting_since: str | None = None
    """When the pod behind `waiting` got stuck (the deadline counts from it)."""


def _container(pod: dict[str, Any], name: str) -> dict[str, Any] | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == name:
            return status
    return None


def server_health(pods: list[dict[str, Any]], crash_loop_restarts: int) -> ServerHealth:
    """Restarts over all server pods, and the reason to fail after `crash_loop_restarts`."""
    restarts = 0
    failure = None
    waiting = None
    since = None
    for pod in pods:
        pod_name = pod["metadata"]["name"]
        stuck = pod_stuck(
            pod,
            names.SERVER_CONTAINER,
            "server",
            "GPU capacity, server.nodeSelector, server.tolerations and the model claim",
        )
        if stuck is not None:
            waiting, since = stuck, stuck_since(pod)
        cs = _container(pod, names.SERVER_CONTAINER)
        if cs is None:
            continue
        count = int(cs.get("restartCount") or 0)
        restarts += count
        last = (
            (cs.get("lastState") or {}).get("terminated")
            or (cs.get("state") or {}).get("terminated")
            or {}
        )
        if count < crash_loop_restarts:
            continue
        failure = _crash_reason(pod_name, count, last)
    return ServerHealth(restarts=restarts, failure=failure, waiting=waiting, waiting_since=since)


def pod_stuck(
    pod: dict[str, Any], container: str, role: str, scheduling_hint: str
) -> tuple[str, str] | None:
    """(reason, message) for a pod that cannot be scheduled or whose image cannot be pulled."""
    pod_name = pod["metadata"]["name"]
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return (
                "Unschedulable",
                f"{role} pod {pod_name} cannot be scheduled: "
                f"{cond.get('message', '')} (check {scheduling_hint})",
            )
    cs = _container(pod, container) or {}
    state_waiting = (cs.get("state") or {}).get("waiting") or {}
    if state_waiting.get("reason") in _IMAGE_ERRORS:
        return (
            "ImagePullError",
            f"{role} pod {pod_name}: {state_waiting.get('reason')}: "
            f"{state_waiting.get('message', '')} (check {role}.image)",
        )
    return None


def stuck_since(pod: dict[str, Any]) -> str | None:
    """Since when a stuck pod has been stuck: when it became unschedulable, else (an image that
    cannot be pulled) since it was created."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        unschedulable = cond.get("type") == "PodScheduled" and cond.get("status") == "False"
        if unschedulable and cond.get("lastTransitionTime"):
            return cond["lastTransitionTime"]
    return (pod.get("metadata") or {}).get("creationTimestamp")


@dataclasses.dataclass(frozen=True)
class Stuck:
    """A child's pod that cannot run: (reason, message) as `pod_stuck` says, and since when."""

    reason: str
    message: str
    since: str | None


def first_stuck(
    pods: list[dict[str, Any]], container: str, role: str, scheduling_hint: str
) -> Stuck | None:
    """The first of `pods` that cannot be scheduled or pull its image."""
    for pod in pods:
        stuck = pod_stuck(pod, container, role, scheduling_hint)
        if stuck is not None:
            return Stuck(stuck[0], stuck[1], stuck_since(pod))
    return None


def stuck_since_first(pods: list[dict[str, Any]], container: str) -> str | None:
    """Since when the first stuck pod of `pods` is stuck (None: none is)."""
    stuck = first_stuck(pods, container, "", "")
    return stuck.since if stuck is not None else None


def generator_stuck(pods: list[dict[str, Any]]) -> tuple[str, str] | None:
    """Why the generator is not running yet, if a person has to act on it."""
    for pod in pods:
        stuck = pod_stuck(
            pod,
            names.GENERATOR_CONTAINER,
            "generator",
            "the output and inputs claims and generator.resources",
        )
        if stuck is not None:
            return ("Generator" + stuck[0], stuck[1])
    return None


def _crash_reason(pod_name: str, count: int, last: dict[str, Any]) -> tuple[str, str]:
    reason = last.get("reason") or "Error"
    message = (last.get("message") or "").strip()
    tail = message[-600:]
    if reason == "OOMKilled":
        return (
            "ServerOutOfHostMemory",
            (
                f"server pod {pod_name} was killed for host memory {count} times (OOMKilled): "
                "lower server.hierarchicalCache.sizeGBPerRank (it is per tensor-parallel rank) or "
                "raise server.resources.limits.memory"
            ),
        )
    if any(word in message.lower() for word in _CUDA_OOM):
        return (
            "ServerOutOfGPUMemory",
            (
                f"server pod {pod_name} ran out of GPU memory and restarted {count} times: lower "
                "server.memFractionStatic (0.85–0.88 leaves room for prefill), "
                f"server.maxRunningRequests or server.chunkedPrefillSize. Last log lines: {tail}"
            ),
        )
    exit_code = last.get("exitCode")
    return (
        "ServerCrashLoop",
        (
            f"server pod {pod_name} restarted {count} times (last exit: {reason}, code "
            f"{exit_code}); see `kubectl logs --previous {pod_name}`. Killed while still loading "
            "(exit 137/143, no error in the log)? Raise the operator's serverStartupSeconds. "
            f"Last log lines: {tail}"
        ),
    )


def ready_replicas(deployments: list[dict[str, Any]]) -> int:
    """Server replicas whose Deployment reports a ready pod."""
    return sum(
        1 for d in deployments if int((d.get("status") or {}).get("readyReplicas") or 0) >= 1
    )


def job_outcome(job: dict[str, Any]) -> tuple[str, str]:
    """('running' | 'succeeded' | 'failed', message) of a batch/v1 Job."""
    status = job.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("status") != "True":
            continue
        if cond.get("type") in ("Complete", "SuccessCriteriaMet"):
            return "succeeded", cond.get("message") or ""
        if cond.get("type") in ("Failed", "FailureTarget"):
            return "failed", (f"{cond.get('reason', '')}: {cond.get('message', '')}").strip(": ")
    if int(status.get("succeeded") or 0) >= 1:
        return "succeeded", ""
    return "running", ""


def generator_failure_detail(pods: list[dict[str, Any]]) -> str:
    """The last failed generator pod's exit and final log lines (FallbackToLogsOnError)."""
    details = []
    for pod in pods:
        cs = _container(pod, names.GENERATOR_CONTAINER)
        term = ((cs or {}).get("state") or {}).get("terminated") or {}
        if term and term.get("exitCode") not in (None, 0):
            details.append((term.get("finishedAt") or "", pod["metadata"]["name"], term))
    if not details:
        return ""
    _, pod_name, term = sorted(details)[-1]
    message = (term.get("message") or "").strip()[-600:]
    return f"pod {pod_name} exited with code {term.get('exitCode')}: {message}".strip(": ")


def termination_message(pods: list[dict[str, Any]], container: str) -> tuple[int | None, str]:
    """(exit code, termination message) of the container that ended last in `pods`
    ((None, "") while none ended): how the download and preflight Jobs report."""
    ended = []
    for pod in pods:
        term = ((_container(pod, container) or {}).get("state") or {}).get("terminated") or {}
        if term:
            ended.append((term.get("finishedAt") or "", pod["metadata"]["name"], term))
    if not ended:
        return None, ""
    term = sorted(ended)[-1][2]
    code = term.get("exitCode")
    return (int(code) if code is not None else None), (term.get("message") or "").strip()


LOST_POD_SECONDS = 600
"""A pod still terminating this long after its deletion is on a node that will not report
(lost): it is no longer waited for."""


def live_pods(pods: list[dict[str, Any]], now: str) -> list[str]:
    """Names of the pods that have not exited (not Succeeded or Failed), except those whose
    node stopped reporting their deletion for `LOST_POD_SECONDS`."""
    current = parse_time(now)
    out = []
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        deleted = parse_time((pod.get("metadata") or {}).get("deletionTimestamp"))
        if deleted and current and (current - deleted).total_seconds() > LOST_POD_SECONDS:
            continue
        out.append(pod["metadata"]["name"])
    return out


def running_pod_ips(pods: list[dict[str, Any]]) -> list[str]:
    """Addresses of running pods (for the generator's metrics and the server's info)."""
    out = []
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") == "Running" and status.get("podIP"):
            out.append(status["podIP"])
    return out


def export_results(pods: list[dict[str, Any]]) -> list[ExportStatus] | None:
    """What the succeeded generator pod's exports wrote (its termination message, from
    `--result-file`), or None when no pod reports them (none succeeded yet, or it is gone)."""
    for pod in pods:
        cs = _container(pod, names.GENERATOR_CONTAINER)
        term = ((cs or {}).get("state") or {}).get("terminated") or {}
        if term.get("exitCode") != 0 or not term.get("message"):
            continue
        try:
            results = parse_results(term["message"])
        except ResultError:
            continue
        return [
            ExportStatus(format=r.format, path=r.path, rows=r.rows, card=r.card) for r in results
        ]
    return None
