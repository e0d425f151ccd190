"""Issue 21, class 9: what a GenerationJob author can do. The admin's policy (allowed image
prefixes, claims, Secrets by name or label) refuses a job at admission and at reconcile, naming
the field and the rule; every job's server is reachable only by its generator, the operator and
the monitoring namespace (a NetworkPolicy, there before any server pod and gone after the last).
"""

from __future__ import annotations

import copy
import dataclasses

import pytest

from draftgen.controller.kube import Kube
from draftgen.controller.reconcile import JobRef, Reconciler
from draftgen.controller.render.network import network_policy
from draftgen.controller.settings import OperatorSettings
from draftgen.controller.validate import admission_problems

from .harness import CORE, Cluster, example_job, wait_for

NS = "drafters"
NETWORKING = "/apis/networking.k8s.io/v1"
BASE = OperatorSettings(http_timeout_seconds=0.2, preflight=False)

# policy → (a job edit it refuses, the field and the rule the refusal must name)
REFUSED = {
    "server image": (
        dict(allowed_image_prefixes=("registry.corp/",)),
        lambda s: s["server"].update(image="evil.example/sglang:latest"),
        "spec.server.image: image 'evil.example/sglang:latest' is refused",
        "policy.allowedImagePrefixes: registry.corp/",
    ),
    "generator image (the operator's default counts too)": (
        dict(allowed_image_prefixes=("lmsysorg/sglang:",)),
        lambda s: None,
        "spec.generator.image: image 'registry.example/draftgen:test' is refused",
        "policy.allowedImagePrefixes: lmsysorg/sglang:",
    ),
    "output claim": (
        dict(allowed_claims=("models", "datasets", "team-a-*")),
        lambda s: None,  # the example writes to claim drafter-data
        "spec.output.claimName: claim 'drafter-data' is refused",
        "policy.allowedClaims: models, datasets, team-a-*",
    ),
    "model claim": (
        dict(allowed_claims=("datasets", "drafter-*")),
        lambda s: None,
        "spec.model.volume.claimName: claim 'models' is refused",
        "policy.allowedClaims: datasets, drafter-*",
    ),
    "token secret by name": (
        dict(allowed_secrets=("hf-draftgen",)),
        lambda s: s["model"].update(hfTokenSecret={"name": "db-password", "key": "token"}),
        "spec.model.hfTokenSecret.name: Secret 'db-password' is refused",
        "policy.allowedSecrets: hf-draftgen",
    ),
}


def _settings(**policy) -> OperatorSettings:
    return dataclasses.replace(BASE, generator_image="registry.example/draftgen:test", **policy)


def _job(edit=lambda s: None, name: str = "kimi") -> dict:
    job = example_job(NS, name=name)
    edit(job["spec"])
    return job


def _step(rec: Reconciler, name: str = "kimi") -> dict:
    fresh = rec.kube.get("GenerationJob", NS, name)
    assert fresh is not None
    ref = JobRef(body=fresh)
    outcome = rec.reconcile(ref)
    patch = {k: v for k, v in outcome.status.items() if ref.old_status.get(k) != v}
    if patch:
        rec.kube.patch("GenerationJob", NS, name, {"status": patch}, subresource="status")
    return outcome.status


@pytest.mark.parametrize("case", REFUSED)
def test_the_policy_refuses_at_reconcile_naming_the_field_and_rule(
    cluster: Cluster, case: str
) -> None:
    policy, edit, field, rule = REFUSED[case]
    cluster.apply(_job(edit))
    rec = Reconciler(Kube(cluster.emu.url, backoff=0.01), _settings(**policy))
    status = _step(rec)
    assert status["phase"] == "Failed"
    spec_valid = next(c for c in status["conditions"] if c["type"] == "SpecValid")
    assert spec_valid["status"] == "False" and spec_valid["reason"] == "InvalidSpec"
    assert field in spec_valid["message"] and rule in spec_valid["message"]
    assert cluster.emu.stored("deployments", NS) == []
    assert cluster.emu.stored("jobs", NS) == []


@pytest.mark.parametrize("case", REFUSED)
def test_the_policy_refuses_at_admission_naming_the_field_and_rule(case: str) -> None:
    policy, edit, field, rule = REFUSED[case]
    problems = admission_problems(_job(edit), _settings(**policy))
    assert any(field in p and rule in p for p in problems), problems


def test_an_empty_policy_allows_what_it_always_did() -> None:
    for _, edit, _, _ in REFUSED.values():
        assert admission_problems(_job(edit), _settings()) == []


def test_the_allowed_ones_pass() -> None:
    settings = _settings(
        allowed_image_prefixes=("lmsysorg/sglang:", "registry.example/"),
        allowed_claims=("models", "datasets", "drafter-*"),
        allowed_secrets=("hf-*",),
    )
    job = _job(lambda s: s["model"].update(hfTokenSecret={"name": "hf-team", "key": "token"}))
    assert admission_problems(job, settings) == []


def _secret(cluster: Cluster, name: str, labels: dict[str, str]) -> None:
    cluster.emu.create(
        CORE,
        "secrets",
        NS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "labels": labels},
            "data": {"token": "c2VjcmV0"},
        },
    )


@pytest.mark.parametrize(
    ("secret", "labels", "why"),
    [
        ("db-password", {"app": "db"}, "does not exist or does not carry the label"),
        ("nowhere", None, "does not exist or does not carry the label"),
    ],
)
def test_a_secret_without_the_policys_label_is_refused_at_reconcile_and_admission(
    cluster: Cluster, secret: str, labels: dict | None, why: str
) -> None:
    if labels is not None:
        _secret(cluster, secret, labels)
    settings = _settings(secret_label="draftgen.io/usable=true")
    job = _job(lambda s: s["model"].update(hfTokenSecret={"name": secret, "key": "token"}))
    cluster.apply(job)
    kube = Kube(cluster.emu.url, backoff=0.01)
    status = _step(Reconciler(kube, settings))
    assert status["phase"] == "Failed"
    assert f"Secret {NS}/{secret} {why}" in status["message"]
    assert "rule policy.secretLabel: draftgen.io/usable=true" in status["message"]
    assert cluster.emu.stored("deployments", NS) == []
    body = copy.deepcopy(job)
    problems = admission_problems(body, settings, kube)
    assert any(f"Secret {NS}/{secret} {why}" in p for p in problems), problems


def test_a_labelled_secret_is_accepted(cluster: Cluster) -> None:
    _secret(cluster, "hf", {"draftgen.io/usable": "true"})
    settings = _settings(secret_label="draftgen.io/usable=true")
    cluster.apply(_job(lambda s: s["model"].update(hfTokenSecret={"name": "hf", "key": "token"})))
    status = _step(Reconciler(Kube(cluster.emu.url, backoff=0.01), settings))
    assert status["phase"] == "StartingServer"


def _secret_requests(cluster: Cluster) -> list[dict]:
    return [
        r
        for r in cluster.emu.requests()
        if r["plural"] == "secrets" and r["agent"].startswith("draftgen-operator")
    ]


def test_the_secret_label_is_watched_in_the_jobs_namespace_not_polled(cluster: Cluster) -> None:
    """Issue 30, item 10: the labelled Secrets of the job's namespace are listed once and then
    watched (each request with the label selector, none cluster-wide), reconciles read the
    cache, and a label removed reaches it through the watch: the next reconcile refuses the
    Secret, with no new request for it."""
    _secret(cluster, "hf", {"draftgen.io/usable": "true"})
    settings = _settings(secret_label="draftgen.io/usable=true")
    cluster.apply(_job(lambda s: s["model"].update(hfTokenSecret={"name": "hf", "key": "token"})))
    rec = Reconciler(Kube(cluster.emu.url, backoff=0.01), settings)
    assert _step(rec)["phase"] == "StartingServer"
    wait_for(lambda: any(r["action"] == "watch" for r in _secret_requests(cluster)), "the watch")
    for _ in range(3):
        assert _step(rec)["phase"] == "StartingServer"
    requests = _secret_requests(cluster)
    assert [r["action"] for r in requests] == ["list", "watch"]
    for r in requests:
        assert r["namespace"] == NS and r["name"] is None
        assert r["params"]["labelSelector"] == "draftgen.io/usable=true"
    cluster.emu.patch(
        CORE, "secrets", NS, "hf", {"metadata": {"labels": {"draftgen.io/usable": None}}}
    )

    def refused() -> str | None:
        spec_valid = next(c for c in _step(rec)["conditions"] if c["type"] == "SpecValid")
        return spec_valid["status"] == "False" and spec_valid["message"]

    # A running job keeps its last accepted spec, and says the Secret is refused now.
    assert "rule policy.secretLabel: draftgen.io/usable=true" in wait_for(
        refused, "the refusal after the label went"
    )
    assert len(_secret_requests(cluster)) == 2


def test_the_network_policy_admits_only_generator_operator_and_monitoring() -> None:
    settings = dataclasses.replace(
        BASE, operator_namespace="draftgen", monitoring_namespace="monitoring"
    )
    pol = network_policy("kimi", NS, settings)
    spec = pol["spec"]
    assert spec["podSelector"]["matchLabels"] == {
        "draftgen.io/job": "kimi",
        "draftgen.io/component": "server",
    }
    assert spec["policyTypes"] == ["Ingress"]
    (rule,) = spec["ingress"]
    assert rule["ports"] == [{"port": "http", "protocol": "TCP"}]
    assert rule["from"] == [
        {
            "podSelector": {
                "matchLabels": {"draftgen.io/job": "kimi", "draftgen.io/component": "generator"}
            }
        },
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "draftgen"}},
            "podSelector": {"matchLabels": {"app.kubernetes.io/component": "operator"}},
        },
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
    ]
    # Without namespaces configured only the generator is admitted (no empty selector, which
    # would admit everything).
    assert network_policy("kimi", NS, BASE)["spec"]["ingress"][0]["from"] == [rule["from"][0]]


def test_the_network_policy_exists_before_any_server_pod_and_goes_after_the_last(
    cluster: Cluster,
) -> None:
    job = cluster.apply(_job())
    rec = Reconciler(Kube(cluster.emu.url, backoff=0.01), BASE)
    _step(rec)
    posts = [
        r["plural"]
        for r in cluster.emu.requests()
        if r["method"] == "POST" and r["plural"] in ("networkpolicies", "deployments")
    ]
    assert posts[0] == "networkpolicies"
    pol = cluster.emu.get(NETWORKING, "networkpolicies", NS, "kimi-server")
    assert pol["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    rec.delete_children("kimi", NS, job["metadata"]["uid"])
    deletes = [
        r["plural"]
        for r in cluster.emu.requests()
        if r["method"] == "DELETE" and r["plural"] in ("networkpolicies", "deployments")
    ]
    assert deletes[-1] == "networkpolicies"
    assert cluster.emu.get(NETWORKING, "networkpolicies", NS, "kimi-server") is None


def test_a_foreign_network_policy_of_that_name_is_not_taken_over(cluster: Cluster) -> None:
    foreign = cluster.emu.create(
        NETWORKING,
        "networkpolicies",
        NS,
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "kimi-server"},
            "spec": {"podSelector": {}, "ingress": [{}]},
        },
    )
    cluster.apply(_job())
    status = _step(Reconciler(Kube(cluster.emu.url, backoff=0.01), BASE))
    assert status["phase"] == "Failed"
    assert f"NetworkPolicy {NS}/kimi-server already exists" in status["message"]
    assert cluster.emu.get(NETWORKING, "networkpolicies", NS, "kimi-server") == foreign
    assert cluster.emu.stored("deployments", NS) == []


def test_the_webhook_refuses_by_policy_through_kopf(cluster: Cluster, monkeypatch) -> None:
    """The real admission path: kopf's webhook server, with the operator's API client for the
    secret label."""
    import httpx

    from .harness import plain_webhook, running_operator
    from .test_webhook import _review, _webhook_url

    port = plain_webhook(
        monkeypatch,
        allowed_image_prefixes=("lmsysorg/sglang:", "registry.example/"),
        secret_label="draftgen.io/usable=true",
    )
    _secret(cluster, "hf", {"draftgen.io/usable": "true"})
    _secret(cluster, "db-password", {})
    with running_operator():
        url = _webhook_url(cluster, port)

        def review(edit) -> dict:
            return httpx.post(url, json=_review(_job(edit)), timeout=10).json()["response"]

        assert review(lambda s: None)["allowed"] is True
        labelled = review(lambda s: s["model"].update(hfTokenSecret={"name": "hf", "key": "t"}))
        assert labelled["allowed"] is True
        image = review(lambda s: s["server"].update(image="evil.example/x:1"))
        assert image["allowed"] is False
        assert "rule policy.allowedImagePrefixes" in image["status"]["message"]
        secret = review(
            lambda s: s["model"].update(hfTokenSecret={"name": "db-password", "key": "t"})
        )
        assert secret["allowed"] is False
        assert "rule policy.secretLabel: draftgen.io/usable=true" in secret["status"]["message"]
