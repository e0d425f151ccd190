"""The validating admission webhook, through kopf's real webhook server and its managed
ValidatingWebhookConfiguration (the emulator has no admission chain: the test plays the API
server and posts the AdmissionReview itself)."""

from __future__ import annotations

import dataclasses
import uuid

import httpx

from draftgen.controller.handlers import state

from .harness import Cluster, example_job, free_port, plain_webhook, running_operator, wait_for

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
