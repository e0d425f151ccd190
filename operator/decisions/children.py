"""What each child needs: the server replicas, the generator Job, and before the GPUs the model
download and preflight Jobs (created, restarted, rolled, scaled, or only observed)."""

from __future__ import annotations

from typing import Any, Literal

from .. import names, observe

ServerAction = Literal["create", "roll", "scale", "keep"]
JobAction = Literal["start", "wait_for_stop", "restart", "observe"]
"""What one of the job's batch Jobs (generator, download, preflight) needs."""


def _annotation(obj: dict[str, Any] | None, key: str) -> str | None:
    return (((obj or {}).get("metadata") or {}).get("annotations") or {}).get(key)


def _job_action(have: dict[str, Any] | None, current: bool) -> JobAction:
    """A batch Job is started when missing, waited for while it is being deleted, restarted
    when it is not `current` (it runs what is no longer wanted), else observed."""
    if have is None:
        return "start"
    if have["metadata"].get("deletionTimestamp"):
        return "wait_for_stop"
    return "observe" if current else "restart"


def ran_this_document(job: dict[str, Any] | None, digest: str) -> bool:
    """The generator Job was started with the job document of hash `digest`."""
    return _annotation(job, names.CONFIG_HASH_ANNOTATION) == digest


# -- the server and the generator -------------------------------------------------------------
def server_action(want: dict[str, Any], have: dict[str, Any] | None) -> ServerAction:
    """What one server Deployment needs: created, rolled (its rendering changed), scaled to 1."""
    if have is None:
        return "create"
    if (
        _annotation(have, names.SERVER_HASH_ANNOTATION)
        != want["metadata"]["annotations"][names.SERVER_HASH_ANNOTATION]
    ):
        return "roll"  # the server's own spec changed (Recreate); budgets never get here
    if int((have.get("spec") or {}).get("replicas") or 0) != 1:
        return "scale"
    return "keep"


def generator_ended(job: dict[str, Any] | None, digest: str) -> bool:
    """The generator already ended with this job document (the server is not needed again)."""
    return (
        job is not None
        and not job["metadata"].get("deletionTimestamp")
        and ran_this_document(job, digest)
        and observe.job_outcome(job)[0] != "running"
    )


def generator_action(job: dict[str, Any] | None, digest: str) -> JobAction:
    """What the generator Job needs once the server is ready. A changed job document (e.g. a
    budget) restarts only the generator; it resumes from the output exactly. The server keeps
    running."""
    return _job_action(job, ran_this_document(job, digest))


# -- before the GPUs: the model download and the preflight ------------------------------------
def first_run_applies(server_deployments: list[dict[str, Any]], generator: Any) -> bool:
    """The download and the preflight gate the first server only: once a server or a generator
    exists (running, suspended, restarting) the job is past them."""
    return not server_deployments and generator is None


def download_action(have: dict[str, Any] | None, revision_key: str) -> JobAction:
    """What the model download Job needs: started, or restarted for another revision."""
    return _job_action(have, _annotation(have, names.REVISION_ANNOTATION) == revision_key)


def preflight_action(have: dict[str, Any] | None, digest: str, gen: int | None) -> JobAction:
    """What the preflight Job needs: started, restarted for another job document, or (failed)
    run again after any spec edit, since the data may have been fixed meanwhile."""
    failed_before_this_edit = (
        have is not None
        and observe.job_outcome(have)[0] == "failed"
        and _annotation(have, names.GENERATION_ANNOTATION) != str(gen or 0)
    )
    return _job_action(have, ran_this_document(have, digest) and not failed_before_this_edit)
