"""Issue 30, item 11: a GenerationJob labelled for Kueue is admitted by it, not run around it.

Its queue and priority labels reach the children Kueue's integrations manage (the server's
Deployment and pod template, a LeaderWorkerSet, the generator's batch Job), the generator Job is
created suspended, and while Kueue holds a gated server pod or the suspended Job the job is
`Queued` with Kueue's reason; admission (played as Kueue does it: gate lifted, Job unsuspended;
tests/operator/emulator/kueue.py) moves it on. Without the labels nothing changes."""

from __future__ import annotations

from draftgen.controller import kueue
from draftgen.controller.kube import Kube
from draftgen.controller.reconcile import JobRef, Reconciler
from draftgen.controller.render import leaderworkerset as render_lws
from draftgen.controller.settings import OperatorSettings
from draftgen.spec import GenerationJobSpec

from .emulator import kueue as played
from .harness import APPS, CORE, Cluster, example_job

NS = "drafters"
SETTINGS = OperatorSettings(http_timeout_seconds=0.2, preflight=False)
LABELS = {kueue.QUEUE_LABEL: "gpu-h100", kueue.PRIORITY_LABEL: "drafting"}


def _step(rec: Reconciler, name: str = "kimi") -> dict:
    fresh = rec.kube.get("GenerationJob", NS, name)
    assert fresh is not None
    ref = JobRef(body=fresh)
    outcome = rec.reconcile(ref)
    patch = {k: v for k, v in outcome.status.items() if ref.old_status.get(k) != v}
    if patch:
        rec.kube.patch("GenerationJob", NS, name, {"status": patch}, subresource="status")
    return outcome.status


def _condition(status: dict, type_: str) -> dict:
    return next(c for c in status["conditions"] if c["type"] == type_)


def _queued_job(cluster: Cluster, labels: dict | None = LABELS) -> Reconciler:
    job = example_job(NS)
    job["spec"]["datasets"] = job["spec"]["datasets"][:1]
    if labels:
        job["metadata"]["labels"] = {**job["metadata"].get("labels", {}), **labels}
    cluster.apply(job)
    return Reconciler(Kube(cluster.emu.url, backoff=0.01), SETTINGS)


def test_a_queued_job_waits_for_kueue_and_moves_on_when_admitted(cluster: Cluster) -> None:
    rec = _queued_job(cluster)
    _step(rec)
    deployment = cluster.deployment("kimi-server-0")
    assert deployment is not None
    for where in (deployment["metadata"], deployment["spec"]["template"]["metadata"]):
        assert LABELS.items() <= where["labels"].items()
    # Kueue's pod webhook gates the server pod: the job is Queued, with Kueue's reason.
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    played.webhook_pod(cluster.emu, NS, "kimi-server-0-abc12", pod_labels)
    status = _step(rec)
    assert status["phase"] == "Queued"
    server = _condition(status, "ServerReady")
    assert (server["status"], server["reason"]) == ("False", "QueuedByKueue")
    assert (
        "LocalQueue gpu-h100" in status["message"] and "kubectl get workloads" in status["message"]
    )
    # Admitted: the gate goes, the pod runs, the server turns ready, the generator Job comes
    # suspended with the labels: Queued again until Kueue admits it too.
    played.admit_pod(cluster.emu, NS, "kimi-server-0-abc12")
    cluster.server_ready("kimi")
    _step(rec)
    generator = cluster.batch_job("kimi-generator")
    assert generator is not None
    assert generator["spec"]["suspend"] is True
    assert LABELS.items() <= generator["metadata"]["labels"].items()
    status = _step(rec)
    assert status["phase"] == "Queued"
    assert _condition(status, "Generating")["reason"] == "QueuedByKueue"
    assert _condition(status, "ServerReady")["status"] == "True"
    played.admit_job(cluster.emu, NS, "kimi-generator")
    cluster.generator_running("kimi")
    assert _step(rec)["phase"] == "Generating"
    # Preempted: Kueue evicts the server, whose pod comes back gated; the job is Queued again.
    cluster.emu.delete(CORE, "pods", NS, "kimi-server-0-abc12")
    cluster.emu.patch(
        APPS,
        "deployments",
        NS,
        "kimi-server-0",
        {"status": {"readyReplicas": 0}},
        subresource="status",
    )
    played.webhook_pod(cluster.emu, NS, "kimi-server-0-def34", pod_labels)
    status = _step(rec)
    assert status["phase"] == "Queued"
    assert _condition(status, "ServerReady")["reason"] == "QueuedByKueue"


def test_without_a_queue_name_nothing_is_labelled_or_suspended(cluster: Cluster) -> None:
    rec = _queued_job(cluster, labels=None)
    _step(rec)
    deployment = cluster.deployment("kimi-server-0")
    assert deployment is not None
    assert kueue.QUEUE_LABEL not in deployment["metadata"].get("labels", {})
    cluster.server_ready("kimi")
    _step(rec)
    generator = cluster.batch_job("kimi-generator")
    assert generator is not None and not generator["spec"].get("suspend")
    assert kueue.QUEUE_LABEL not in generator["metadata"]["labels"]


def test_a_leader_worker_set_carries_the_labels() -> None:
    job = example_job(NS)
    job["spec"]["server"]["nodesPerReplica"] = 2
    spec = GenerationJobSpec.model_validate(job["spec"])
    owner = {"metadata": {"name": "kimi", "labels": LABELS}}
    (lws,) = render_lws.server_objects(spec, "kimi", NS, SETTINGS)
    assert lws["kind"] == "LeaderWorkerSet"
    kueue.prepare(lws, owner)
    assert LABELS.items() <= lws["metadata"]["labels"].items()


def test_the_documented_wait_for_pods_ready_outlasts_the_servers_startup() -> None:
    """docs/operator.md's Kueue timeout is longer than the chart's default startup allowance,
    so Kueue would not evict a server still loading a 1T-parameter model."""
    import re
    from pathlib import Path

    import yaml

    repo = Path(__file__).resolve().parents[2]
    doc = (repo / "docs" / "operator.md").read_text()
    minutes = int(re.search(r"waitForPodsReady:\n  enable: true\n  timeout: (\d+)m", doc).group(1))
    values = yaml.safe_load((repo / "charts" / "draftgen" / "values.yaml").read_text())
    assert minutes * 60 > values["operator"]["serverStartupSeconds"] >= 1800
