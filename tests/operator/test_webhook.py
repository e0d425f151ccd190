"""The validating admission webhook, through kopf's real webhook server and its managed
ValidatingWebhookConfiguration (the emulator has no admission chain: the test plays the API
server and posts the AdmissionReview itself)."""

from __future__ import annotations

import dataclasses
import uuid

import httpx

from draftgen.controller.handlers import state

from .harness import GJ, Cluster, example_job, free_port, plain_webhook, running_operator, wait_for

VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/draftgen.io"


def _review(obj: dict) -> dict:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "operation": "CREATE",
            "kind": {"group": "draftgen.io", "version": "v1alpha1", "kind": "GenerationJob"},
            "resource": {
                "group": "draftgen.io",
                "version": "v1alpha1",
                "resource": "generationjobs",
            },
            "namespace": obj["metadata"]["namespace"],
            "name": obj["metadata"]["name"],
            "userInfo": {"username": "tester"},
            "object": obj,
            "oldObject": None,
            "dryRun": False,
        },
    }


def test_webhook_refuses_an_invalid_job_and_admits_a_valid_one(
    cluster: Cluster, monkeypatch
) -> None:
    port = plain_webhook(monkeypatch)
    with running_operator():
        config = wait_for(
            lambda: (
                (rsp := cluster.emu.http.get(VWC)).status_code == 200
                and rsp.json().get("webhooks")
                and rsp.json()
            ),
            "the managed ValidatingWebhookConfiguration",
        )
        hook = config["webhooks"][0]
        url = hook["clientConfig"]["url"]
        assert url.startswith(f"http://127.0.0.1:{port}/")
        assert hook["rules"][0]["resources"] == ["generationjobs"]

        good = example_job(cluster.ns)
        rsp = httpx.post(url, json=_review(good), timeout=10).json()["response"]
        assert rsp["allowed"] is True

        bad = example_job(cluster.ns)
        bad["spec"]["server"]["hierarchicalCache"]["sizeGBPerRank"] = 300
        rsp = httpx.post(url, json=_review(bad), timeout=10).json()["response"]
        assert rsp["allowed"] is False
        assert rsp["status"]["code"] == 422
        assert "hierarchicalCache.sizeGBPerRank" in rsp["status"]["message"]


def _webhook_on(monkeypatch, plain) -> int:
    port = free_port()
    monkeypatch.setattr(
        state,
        "SETTINGS",
        dataclasses.replace(
            plain, webhook=True, webhook_port=port, webhook_host="127.0.0.1", webhook_insecure=True
        ),
    )
    return port


def _webhook_url(cluster: Cluster, port: int) -> str:
    return wait_for(
        lambda: (
            (rsp := cluster.emu.http.get(VWC)).status_code == 200
            and (url := rsp.json()["webhooks"][0]["clientConfig"]["url"]).startswith(
                f"http://127.0.0.1:{port}/"
            )
            and url
        ),
        f"the managed ValidatingWebhookConfiguration on port {port}",
    )


def test_runs_with_and_without_the_webhook_in_one_process(cluster: Cluster, monkeypatch) -> None:
    """The suite starts the operator many times in one process (tests/faults after this file):
    a run without the webhook still reconciles after one with it (kopf refuses to start when an
    admission handler is registered but no webhook server is), and a later webhook run still
    refuses an invalid job."""
    plain = state.SETTINGS
    bad = example_job(cluster.ns, name="bad")
    bad["spec"]["server"]["hierarchicalCache"]["sizeGBPerRank"] = 300

    port = _webhook_on(monkeypatch, plain)
    with running_operator():
        _webhook_url(cluster, port)

    monkeypatch.setattr(state, "SETTINGS", plain)
    with running_operator():
        cluster.apply(example_job(cluster.ns))
        wait_for(lambda: cluster.deployment("kimi-server-0"), "the server Deployment")

    port = _webhook_on(monkeypatch, plain)
    with running_operator():
        url = _webhook_url(cluster, port)
        rsp = httpx.post(url, json=_review(bad), timeout=10).json()["response"]
        assert rsp["allowed"] is False
        assert "hierarchicalCache.sizeGBPerRank" in rsp["status"]["message"]


def _as_the_chart_sets_it(cluster: Cluster, monkeypatch) -> tuple[str, int]:
    """The operator's webhook settings as the chart renders them (webhook on), except that it
    serves plain HTTP on a free port of 127.0.0.1 (no certificates in tests); the emulator
    routes the chart's webhook Service to it, as the Service reaches the pod in a cluster.
    Returns the Service's name and port."""
    from tests.chart.rendering import of_kind, one, render

    docs = render({"operator": {"webhook": {"enabled": True, "certSecret": "webhook-tls"}}})
    container = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    chart = state.SETTINGS.from_env(
        {e["name"]: e["value"] for e in container["env"] if "value" in e}
    )
    port = free_port()
    webhook = {f.name: getattr(chart, f.name) for f in dataclasses.fields(chart)}
    webhook = {k: v for k, v in webhook.items() if k.startswith("webhook")}
    webhook.update(
        webhook_port=port,
        webhook_address="127.0.0.1",
        webhook_insecure=True,
        webhook_certfile=None,
        webhook_pkeyfile=None,
    )
    monkeypatch.setattr(state, "SETTINGS", dataclasses.replace(state.SETTINGS, **webhook))
    (service,) = [s for s in of_kind(docs, "Service") if s["metadata"]["name"].endswith("webhook")]
    meta, svc_port = service["metadata"], service["spec"]["ports"][0]["port"]
    cluster.emu.route_service(meta["namespace"], meta["name"], svc_port, f"http://127.0.0.1:{port}")
    return meta["name"], svc_port


def _refusal(call) -> httpx.Response:
    try:
        call()
    except httpx.HTTPStatusError as err:
        return err.response
    raise AssertionError("the API server accepted it")


def test_the_api_server_reaches_the_webhook_the_chart_configures(
    cluster: Cluster, monkeypatch
) -> None:
    """The API server calls the webhook through the chart's Service (a `url:` on a `*.svc` name
    is resolved with the API server's own DNS and fails: every GenerationJob write would)."""
    name, port = _as_the_chart_sets_it(cluster, monkeypatch)
    with running_operator():
        hook = wait_for(
            lambda: (cluster.emu.http.get(VWC).json().get("webhooks") or [None])[0],
            "the managed ValidatingWebhookConfiguration",
        )
        assert hook["clientConfig"]["service"] == {
            "namespace": "draftgen",
            "name": name,
            "port": port,
            "path": "/generationjob-spec",
        }
        assert "url" not in hook["clientConfig"]
        cluster.apply(example_job(cluster.ns))  # admitted
        bad = example_job(cluster.ns, name="bad")
        bad["spec"]["server"]["hierarchicalCache"]["sizeGBPerRank"] = 300
        refused = _refusal(lambda: cluster.apply(bad))
        assert refused.status_code == 422
        assert "hierarchicalCache.sizeGBPerRank" in refused.json()["message"]
        wait_for(lambda: cluster.deployment("kimi-server-0"), "the valid job's server")


def test_the_webhook_never_blocks_metadata_or_deleting_an_invalid_job(
    cluster: Cluster, monkeypatch
) -> None:
    """A job stored before the webhook was on (or before a policy change) and invalid now: its
    labels, finalizers and deletion go through; only a spec change is validated."""
    bad = example_job(cluster.ns, name="bad")
    bad["spec"]["server"]["hierarchicalCache"]["sizeGBPerRank"] = 300
    with running_operator():  # no webhook yet: stored, refused by the operator, finalized
        cluster.apply(bad)
        wait_for(
            lambda: (
                "draftgen.io/cleanup"
                in (cluster.job("bad") or {})["metadata"].get("finalizers", [])
                and cluster.status("bad").get("phase") == "Failed"
            ),
            "the invalid job Failed with the operator's finalizer",
        )
    _as_the_chart_sets_it(cluster, monkeypatch)
    with running_operator():
        wait_for(
            lambda: (cluster.emu.http.get(VWC).json().get("webhooks") or [None])[0],
            "the managed ValidatingWebhookConfiguration",
        )
        refused = _refusal(
            lambda: cluster.edit_spec(
                "bad", {"server": {"hierarchicalCache": {"sizeGBPerRank": 299}}}
            )
        )
        assert refused.status_code == 422  # a spec change is still validated
        cluster.emu.patch(
            GJ, "generationjobs", cluster.ns, "bad", {"metadata": {"labels": {"a": "b"}}}
        )
        cluster.emu.delete(GJ, "generationjobs", cluster.ns, "bad")
        wait_for(lambda: cluster.job("bad") is None, "the invalid job deleted (finalizer removed)")


def test_what_the_webhook_judges() -> None:
    from draftgen.controller.webhook import needs_validation

    job = example_job("drafters")
    labelled = {**job, "metadata": {**job["metadata"], "labels": {"team": "a"}}}
    edited = {**job, "spec": {**job["spec"], "suspend": True}}
    deleting = {
        **edited,
        "metadata": {**job["metadata"], "deletionTimestamp": "2026-12-03T00:00:00Z"},
    }
    assert needs_validation("CREATE", None, job)
    assert needs_validation("UPDATE", job, edited)  # a spec change
    assert not needs_validation("UPDATE", job, labelled)  # metadata only (finalizers too)
    assert not needs_validation("UPDATE", job, deleting)  # being deleted, even with a spec edit
