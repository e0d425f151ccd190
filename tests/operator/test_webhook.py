"""The validating admission webhook, through kopf's real webhook server and its managed
ValidatingWebhookConfiguration (the emulator has no admission chain: the test plays the API
server and posts the AdmissionReview itself)."""

from __future__ import annotations

import dataclasses
import uuid

import httpx
from conftest import Cluster, example_job, free_port, running_operator, wait_for

from draftgen.controller.handlers import state

VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/draftgen.io"


def _review(obj: dict) -> dict:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": str(uuid.uuid4()), "operation": "CREATE",
        "kind": {"group": "draftgen.io", "version": "v1alpha1", "kind": "GenerationJob"},
        "resource": {"group": "draftgen.io", "version": "v1alpha1",
                     "resource": "generationjobs"},
        "namespace": obj["metadata"]["namespace"], "name": obj["metadata"]["name"],
        "userInfo": {"username": "tester"}, "object": obj, "oldObject": None,
        "dryRun": False}}


def test_webhook_refuses_an_invalid_job_and_admits_a_valid_one(cluster: Cluster,
                                                             monkeypatch) -> None:
    port = free_port()
    monkeypatch.setattr(state, "SETTINGS", dataclasses.replace(
        state.SETTINGS, webhook=True, webhook_port=port, webhook_host="127.0.0.1",
        webhook_insecure=True))
    with running_operator():
        config = wait_for(lambda: (rsp := cluster.emu.http.get(VWC)).status_code == 200
                          and rsp.json().get("webhooks") and rsp.json(),
                          "the managed ValidatingWebhookConfiguration")
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
