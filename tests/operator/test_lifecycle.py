"""The whole life of a GenerationJob, kopf against the Kubernetes emulator: create → server →
(simulated readiness) → generator Job → progress from a real generator metrics endpoint →
success → server torn down; and deletion cleans up everything."""

from __future__ import annotations

from pathlib import Path

import yaml
from prometheus_client import start_http_server

from draftgen.controller import rbac
from draftgen.generator.prompts.template_clock import job_date
from draftgen.generator.telemetry.metrics import GeneratorMetrics
from draftgen.spec import parse_job

from .emulator import OPERATOR_AGENTS
from .harness import Cluster, example_job, free_port, wait_for
from .probes import rule_triples


def _serve_generator_metrics(port: int) -> tuple[GeneratorMetrics, object]:
    """The generator's own metrics class on a local port, with some progress in it."""
    m = GeneratorMetrics()
    m.budget.labels("b-chat").set(10_000_000)
    m.samples.labels("b-chat", "stop").inc(900)
    m.samples.labels("b-chat", "length").inc(100)
    m.completion_tokens.labels("b-chat", "stop").inc(2_500_000)
    m.completion_tokens.labels("b-chat", "length").inc(500_000)
    m.prompt_tokens.labels("b-chat").inc(4_000_000)
    m.rejects.labels("b-chat", "prompt_too_long").inc(3)
    m.budget.labels("b-coding").set(10_000_000)
    m.completion_tokens.labels("b-coding", "stop").inc(10_400_000)
    m.samples.labels("b-coding", "stop").inc(2_700)
    m.dataset_done.labels("b-coding").set(1)
    m.completion_tokens_per_second.set(930.0)
    m.eta.set(62_400)
    server, thread = start_http_server(port, addr="127.0.0.1", registry=m.registry)
    return m, server


def test_create_to_success_then_teardown(cluster: Cluster, operator) -> None:
    port = free_port()
    job = example_job(cluster.ns, datasets=example_job(cluster.ns)["spec"]["datasets"][:2])
    job["spec"]["generator"]["metricsPort"] = port
    cluster.apply(job)

    # 1. The server: a headless Service and one Deployment; no generator before it is ready.
    dep = wait_for(lambda: cluster.deployment("kimi-server-0"), "the server Deployment")
    svc = cluster.service("kimi-server")
    assert svc["spec"]["clusterIP"] == "None"
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--tp-size") + 1] == "8"
    status = cluster.wait_phase("kimi", "StartingServer")
    assert status["observedGeneration"] == 1
    assert cluster.condition("kimi", "SpecValid")["status"] == "True"
    assert cluster.batch_job("kimi-generator") is None
    # Owned and labelled: a cluster's GC and `kubectl get -l draftgen.io/job=kimi` find them.
    uid = cluster.job("kimi")["metadata"]["uid"]
    for obj in (dep, svc):
        assert obj["metadata"]["ownerReferences"][0]["uid"] == uid
        assert obj["metadata"]["labels"]["draftgen.io/job"] == "kimi"

    # 2. Ready server → ConfigMap with the job document and the generator Job.
    cluster.server_ready("kimi")
    gen = wait_for(lambda: cluster.batch_job("kimi-generator"), "the generator Job")
    cm = cluster.configmap("kimi-generator")
    doc = yaml.safe_load(cm["data"]["job.yaml"])
    assert "status" not in doc
    assert parse_job(doc).spec.datasets[0].name == "b-chat"
    assert doc["spec"] == cluster.job("kimi")["spec"]
    # the chat template's default date (spec.model.templateDate): the job's creation day
    created = cluster.job("kimi")["metadata"]["creationTimestamp"]
    assert doc["metadata"]["creationTimestamp"] == created
    assert job_date(parse_job(doc), Path("/nonexistent")) == created[:10]
    container = gen["spec"]["template"]["spec"]["containers"][0]
    assert (
        container["args"][container["args"].index("--server") + 1]
        == "http://kimi-server-0.kimi-server.drafters.svc:30000"
    )
    assert gen["spec"]["backoffLimit"] == 6
    assert gen["metadata"]["ownerReferences"][0]["uid"] == uid
    writable = [
        m["name"]
        for m in container["volumeMounts"]
        if not m.get("readOnly") and m["name"] not in ("tmp",)
    ]
    assert writable == ["output"]
    status = cluster.wait_phase("kimi", "Generating")
    assert status["startTime"]
    assert cluster.condition("kimi", "ServerReady")["status"] == "True"

    # 3. Progress, read from a real generator metrics endpoint.
    metrics, server = _serve_generator_metrics(port)
    try:
        cluster.generator_running("kimi")
        status = wait_for(
            lambda: (s := cluster.status("kimi")).get("datasets") and s,
            "per-dataset progress in status",
        )
        by_name = {d["name"]: d for d in status["datasets"]}
        assert by_name["b-chat"]["completionTokens"] == 3_000_000
        assert by_name["b-chat"]["samples"] == 1000
        assert by_name["b-chat"]["rejects"] == 3
        assert by_name["b-chat"]["done"] is False
        assert by_name["b-coding"]["done"] is True
        assert by_name["b-coding"]["overshootPercent"] == 4.0
        assert status["completionTokens"] == 13_400_000
        assert status["progress"] == "65%"  # (3.0M + 10M capped) of 20M
        assert status["throughputTokensPerSecond"] == 930.0
        assert status["eta"] == "17h20m"
    finally:
        server.shutdown()

    # 4. The generator finishes → Succeeded, server torn down, generator objects kept.
    cluster.finish_generator("kimi")
    status = cluster.wait_phase("kimi", "Succeeded")
    assert status["completionTime"]
    assert cluster.condition("kimi", "Complete")["reason"] == "AllDatasetsDone"
    wait_for(lambda: cluster.deployment("kimi-server-0") is None, "the server torn down")
    assert cluster.service("kimi-server") is None
    assert cluster.batch_job("kimi-generator") is not None
    # A finished job is still polled, but its teardown is not repeated: one list per poll.
    polls = lambda: len(_operator_requests(cluster, "list", "deployments"))  # noqa: E731
    seen = polls()
    wait_for(lambda: polls() >= seen + 3, "three more polls of the finished job")
    assert len(_operator_requests(cluster, "delete", "deployments")) == 1
    assert len(_operator_requests(cluster, "delete", "services")) == 1

    # Every request the operator made is allowed by the RBAC rules the chart renders.
    _assert_covered_by_rbac(cluster)


def _operator_requests(cluster: Cluster, action: str, plural: str) -> list[dict]:
    return [
        r
        for r in cluster.emu.requests()
        if r["action"] == action
        and r["plural"] == plural
        and r["agent"].startswith("draftgen-operator")
    ]


VERBS = {
    "list": "list",
    "watch": "watch",
    "fetch": "get",
    "create": "create",
    "update": "patch",
    "delete": "delete",
}


def _assert_covered_by_rbac(cluster: Cluster) -> None:
    # This operator watches every namespace (the chart's operator.clusterWide mode).
    allowed = rule_triples(rbac.rules(all_namespaces=True))
    seen = set()
    for r in cluster.emu.requests():
        # Only the operator's own requests (kopf's and draftgen's client), not the test's.
        if not r["agent"].startswith(OPERATOR_AGENTS):
            continue
        if r["plural"] is None:  # API discovery: open to every authenticated client
            continue
        resource = r["plural"] + (f"/{r['subresource']}" if r["subresource"] else "")
        need = (r["group"], resource, VERBS[r["action"]])
        seen.add(need)
        assert need in allowed, f"the operator did {need} but rbac.rules() do not allow it"
    # The check saw the operator at work (a check over nothing would always pass).
    assert ("apps", "deployments", "create") in seen
    assert ("draftgen.io", "generationjobs/status", "patch") in seen


def test_delete_removes_every_child(cluster: Cluster, operator) -> None:
    cluster.apply(example_job(cluster.ns))
    wait_for(lambda: cluster.deployment("kimi-server-0"), "the server Deployment")
    cluster.server_ready("kimi")
    wait_for(lambda: cluster.batch_job("kimi-generator"), "the generator Job")

    cluster.emu.delete("/apis/draftgen.io/v1alpha1", "generationjobs", cluster.ns, "kimi")
    wait_for(lambda: cluster.job("kimi") is None, "the GenerationJob gone (finalizer released)")
    assert cluster.deployment("kimi-server-0") is None
    assert cluster.service("kimi-server") is None
    assert cluster.configmap("kimi-generator") is None
    assert cluster.batch_job("kimi-generator") is None


def test_a_suspended_job_shows_no_rate_or_eta_and_polls_log_nothing(
    cluster: Cluster, operator, caplog
) -> None:
    """Suspended, nothing generates: Tok/s and ETA go (the tokens done stay). And the operator
    logs decisions, not polls: while nothing changes, a poll writes no INFO line (kopf's
    "Timer succeeded", an HTTP client's line per request)."""
    import logging

    caplog.set_level(logging.INFO)
    port = free_port()
    job = example_job(cluster.ns)
    job["spec"]["generator"]["metricsPort"] = port
    cluster.apply(job)
    wait_for(lambda: cluster.deployment("kimi-server-0"), "the server Deployment")
    cluster.server_ready("kimi")
    wait_for(lambda: cluster.batch_job("kimi-generator"), "the generator Job")
    metrics, server = _serve_generator_metrics(port)
    try:
        cluster.generator_running("kimi")
        wait_for(
            lambda: cluster.status("kimi").get("throughputTokensPerSecond") == 930.0,
            "the rate read from the generator",
        )
        polls = lambda: len(_operator_requests(cluster, "fetch", "generationjobs"))  # noqa: E731
        seen, lines = polls(), len(caplog.records)
        wait_for(lambda: polls() >= seen + 5, "five more polls of the unchanged job")
        quiet = [
            r
            for r in caplog.records[lines:]
            # aiohttp.access: the emulator's own access log (the test's API server)
            if r.levelno >= logging.INFO and r.name != "aiohttp.access"
        ]
        assert not quiet, [r.getMessage() for r in quiet]
    finally:
        server.shutdown()
    cluster.edit_spec("kimi", {"suspend": True})
    status = cluster.wait_phase("kimi", "Suspended")
    assert "throughputTokensPerSecond" not in status and "etaSeconds" not in status
    assert not status.get("eta")
    assert status["completionTokens"] == 13_400_000


def test_deleting_a_running_job_waits_for_its_generator_pod_to_exit(
    cluster: Cluster, operator
) -> None:
    """The generator may be writing its last records: the server and the GenerationJob stay
    until its pod has exited (the kubelet's part played here), so a job re-created under the
    same name never runs a second generator on the same output."""
    cluster.apply(example_job(cluster.ns))
    wait_for(lambda: cluster.deployment("kimi-server-0"), "the server Deployment")
    cluster.server_ready("kimi")
    wait_for(lambda: cluster.batch_job("kimi-generator"), "the generator Job")
    cluster.generator_running("kimi")

    cluster.emu.delete("/apis/draftgen.io/v1alpha1", "generationjobs", cluster.ns, "kimi")
    wait_for(lambda: cluster.batch_job("kimi-generator") is None, "the generator Job deleted")
    pod_lists = lambda: _operator_requests(cluster, "list", "pods")  # noqa: E731
    seen = len(pod_lists())
    wait_for(
        lambda: cluster.job("kimi") is None or len(pod_lists()) >= seen + 2,
        "the job gone, or its deletion retried while the pod runs",
    )
    assert cluster.job("kimi") is not None, "the job went while its generator still ran"
    assert cluster.deployment("kimi-server-0") is not None

    cluster.emu.delete("/api/v1", "pods", cluster.ns, "kimi-generator-xyz34")  # it exited
    wait_for(lambda: cluster.job("kimi") is None, "the GenerationJob gone once the pod exited")
    assert cluster.deployment("kimi-server-0") is None
