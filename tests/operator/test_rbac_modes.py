"""The chart's RBAC is what the operator really calls, in each mode: every namespace, chosen
namespaces, the admission webhook on.

A full lifecycle runs through kopf (with peering, as the chart runs it) against an emulator that
authorizes the operator's requests with the rules the chart renders for that mode, and enforces
the OwnerReferencesPermissionEnforcement admission plugin (OpenShift's default): a call outside
the rules is refused with a 403, as a real server would, and the set of (group, resource, verb)
the operator called must equal what the chart grants."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import kopf
import pytest

from draftgen.controller import rbac
from draftgen.controller.handlers import state
from tests.chart.rendering import render as render_chart

from .emulator import OPERATOR_AGENTS, EmulatorThread, Grant, Rbac
from .harness import (
    _KUBECONFIG,
    Cluster,
    example_job,
    free_port,
    plain_webhook,
    running_operator,
    wait_for,
)
from .probes import rule_triples

NS = "drafters"
SA = {"kind": "ServiceAccount", "name": "dg-draftgen", "namespace": "draftgen"}
PEERINGS = "/apis/kopf.dev/v1"
NETWORKING = "/apis/networking.k8s.io/v1"

# Granted, and checked by admission only: no request names it (the Rbac emulator enforces it).
ADMISSION_ONLY = {("draftgen.io", "generationjobs/finalizers", "update")}


def chart_grants(values: dict, release_namespace: str = "draftgen") -> tuple[Grant, ...]:
    """What the chart's roles and bindings grant its ServiceAccount, as a real API server reads
    them: a ClusterRole's rules everywhere through a ClusterRoleBinding, or in one namespace
    through a RoleBinding; a Role's only in its own namespace, and only through a RoleBinding
    there."""
    docs = render_chart({"operator": values}, namespace=release_namespace)
    sa = {**SA, "namespace": release_namespace}
    cluster_roles = {
        d["metadata"]["name"]: tuple(d["rules"]) for d in docs if d["kind"] == "ClusterRole"
    }
    roles = {
        (d["metadata"]["namespace"], d["metadata"]["name"]): tuple(d["rules"])
        for d in docs
        if d["kind"] == "Role"
    }
    out = []
    for binding in docs:
        if (
            binding["kind"] not in ("ClusterRoleBinding", "RoleBinding")
            or sa not in binding["subjects"]
        ):
            continue
        ref = binding["roleRef"]
        if binding["kind"] == "ClusterRoleBinding":
            assert ref["kind"] == "ClusterRole", "a ClusterRoleBinding can only name a ClusterRole"
            out.append(Grant(cluster_roles[ref["name"]], None))
            continue
        namespace = binding["metadata"]["namespace"]
        rules = (
            roles[(namespace, ref["name"])] if ref["kind"] == "Role" else cluster_roles[ref["name"]]
        )
        out.append(Grant(rules, frozenset({namespace})))
    return tuple(out)


@pytest.fixture
def enforcing(monkeypatch) -> Iterator:
    """Start an emulator that authorizes the operator with the chart's RBAC for `values`."""
    started: list[EmulatorThread] = []

    def start(values: dict, release_namespace: str = "draftgen") -> Cluster:
        monkeypatch.setenv("KUBECONFIG", str(_KUBECONFIG))
        grants = chart_grants(values, release_namespace)
        emu = EmulatorThread(
            _KUBECONFIG.parent,
            kubeconfig=_KUBECONFIG,
            rbac=Rbac(grants, user=f"system:serviceaccount:{release_namespace}:dg-draftgen"),
        ).start()
        started.append(emu)
        return Cluster(emu, NS)

    yield start
    for emu in started:
        emu.stop()


def _lifecycle(cluster: Cluster, **spec_changes) -> None:
    """Create → ready → generating → budget edit → NetworkPolicy restored → suspend → resume →
    success → TTL deletion → finalizer removal."""
    job = example_job(NS)
    job["spec"]["model"].update(spec_changes.pop("model", {}))
    job["spec"]["datasets"] = job["spec"]["datasets"][:1]
    job["spec"]["generator"]["metricsPort"] = free_port()
    job["spec"]["ttlSecondsAfterFinished"] = 0
    cluster.apply(job)
    wait_for(lambda: cluster.deployment("kimi-server-0"), "the server")
    cluster.server_ready("kimi")
    wait_for(lambda: cluster.batch_job("kimi-generator"), "the generator")
    cluster.generator_running("kimi")
    ds = cluster.job("kimi")["spec"]["datasets"]
    ds[0]["budget"] = {"completionTokens": 123_456}
    cluster.edit_spec("kimi", {"datasets": ds})
    wait_for(
        lambda: "123456" in cluster.configmap("kimi-generator")["data"]["job.yaml"],
        "the new job document",
    )
    # Someone opens the server to every pod: the operator puts its NetworkPolicy back.
    wanted = cluster.emu.get(NETWORKING, "networkpolicies", NS, "kimi-server")["spec"]
    cluster.emu.patch(NETWORKING, "networkpolicies", NS, "kimi-server", {"spec": {"ingress": [{}]}})
    wait_for(
        lambda: cluster.emu.get(NETWORKING, "networkpolicies", NS, "kimi-server")["spec"] == wanted,
        "the NetworkPolicy put back",
    )
    cluster.edit_spec("kimi", {"suspend": True})
    cluster.wait_phase("kimi", "Suspended")
    cluster.edit_spec("kimi", {"suspend": False})
    cluster.server_ready("kimi")
    wait_for(lambda: cluster.batch_job("kimi-generator"), "the generator again")
    cluster.finish_generator("kimi")
    wait_for(lambda: cluster.job("kimi") is None, "the TTL deletion and the finalizer")


def _cluster_peering(cluster: Cluster) -> None:
    """The ClusterKopfPeering an all-namespaces operator with `--peering draftgen` needs."""
    cluster.emu.http.post(
        f"{PEERINGS}/clusterkopfpeerings",
        json={
            "apiVersion": "kopf.dev/v1",
            "kind": "ClusterKopfPeering",
            "metadata": {"name": "draftgen"},
        },
    ).raise_for_status()


def _used(cluster: Cluster) -> set[tuple[str, str, str]]:
    verbs = {
        "list": "list",
        "watch": "watch",
        "fetch": "get",
        "create": "create",
        "delete": "delete",
    }
    out = set()
    for r in cluster.emu.requests():
        if not r["agent"].startswith(OPERATOR_AGENTS) or not r["plural"]:
            continue
        resource = r["plural"] + (f"/{r['subresource']}" if r["subresource"] else "")
        verb = {"PATCH": "patch", "PUT": "update"}.get(r["method"]) or verbs[r["action"]]
        out.add((r["group"], resource, verb))
    return out


def _check(cluster: Cluster, rules: list[dict]) -> None:
    """What the operator called is what the chart granted (and what operator/rbac.py says)."""
    assert cluster.emu.rbac is not None
    used = _used(cluster)
    granted = rule_triples(rule for grant in cluster.emu.rbac.grants for rule in grant.rules)
    assert used <= granted, f"called but not granted (refused with 403): {used - granted}"
    assert granted - used - ADMISSION_ONLY == set(), (
        f"granted but never called: {sorted(granted - used - ADMISSION_ONLY)}"
    )
    assert granted == rule_triples(rules)


def test_every_namespace(enforcing) -> None:
    cluster = enforcing({"clusterWide": True})
    _cluster_peering(cluster)
    with running_operator(("--all-namespaces", "--peering", "draftgen")):
        _lifecycle(cluster)
    _check(cluster, rbac.rules(all_namespaces=True, webhook=False))


def test_chosen_namespaces(enforcing, monkeypatch) -> None:
    cluster = enforcing({"watchNamespaces": [NS]})
    _namespaced(cluster, monkeypatch)
    with running_operator(("--namespace", NS, "--peering", "draftgen")):
        _lifecycle(cluster)
    _check(cluster, rbac.rules(all_namespaces=False, webhook=False))


def test_the_default_serves_the_release_namespace_only(enforcing, monkeypatch) -> None:
    """The chart's defaults, installed in the jobs' namespace: a Role there, nothing elsewhere.
    The full lifecycle works, and the operator's rights stop at that namespace: creating a
    Deployment in kube-system is refused as a real API server refuses it."""
    cluster = enforcing({}, release_namespace=NS)
    _namespaced(cluster, monkeypatch)
    with running_operator(("--namespace", NS, "--peering", "draftgen")):
        _lifecycle(cluster)
    _check(cluster, rbac.rules(all_namespaces=False, webhook=False))
    rsp = cluster.emu.http.post(
        "/apis/apps/v1/namespaces/kube-system/deployments",
        json={"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}},
        headers={"User-Agent": "draftgen-operator"},
    )
    assert rsp.status_code == 403
    assert 'in the namespace "kube-system"' in rsp.json()["message"]


def _namespaced(cluster: Cluster, monkeypatch) -> None:
    """The operator serving NS only, with its KopfPeering there (as the chart creates it)."""
    monkeypatch.setattr(state, "SETTINGS", dataclasses.replace(state.SETTINGS, namespaces=(NS,)))
    cluster.emu.create(
        PEERINGS,
        "kopfpeerings",
        NS,
        {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfPeering",
            "metadata": {"name": "draftgen", "namespace": NS},
        },
    )


def test_webhook_on(enforcing, monkeypatch) -> None:
    cluster = enforcing(
        {"clusterWide": True, "webhook": {"enabled": True, "certSecret": "webhook-tls"}}
    )
    plain_webhook(monkeypatch)
    _cluster_peering(cluster)
    admission = "/apis/admissionregistration.k8s.io/v1"
    with running_operator(("--all-namespaces", "--peering", "draftgen")):
        for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
            wait_for(
                lambda: (
                    cluster.emu.http.get(
                        f"{admission}/{kind}/{rbac.WEBHOOK_CONFIGURATION}"
                    ).status_code
                    == 200
                ),
                kind,
            )
        wait_for(
            lambda: (
                cluster.emu.http.get(
                    f"{admission}/validatingwebhookconfigurations/{rbac.WEBHOOK_CONFIGURATION}"
                )
                .json()
                .get("webhooks")
            ),
            "the webhook in its configuration",
        )
        _lifecycle(cluster)
    _check(cluster, rbac.rules(all_namespaces=True, webhook=True))


def test_secret_label_policy(enforcing, monkeypatch) -> None:
    """policy.secretLabel: the one mode in which the operator reads a Secret (its labels)."""
    cluster = enforcing({"clusterWide": True, "policy": {"secretLabel": "draftgen.io/usable=true"}})
    monkeypatch.setattr(
        state,
        "SETTINGS",
        dataclasses.replace(state.SETTINGS, secret_label="draftgen.io/usable=true"),
    )
    cluster.emu.create(
        "/api/v1",
        "secrets",
        NS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "hf", "labels": {"draftgen.io/usable": "true"}},
            "data": {"token": "c2VjcmV0"},
        },
    )
    _cluster_peering(cluster)
    with running_operator(("--all-namespaces", "--peering", "draftgen")):
        _lifecycle(cluster, model={"hfTokenSecret": {"name": "hf", "key": "token"}})
    _check(cluster, rbac.rules(all_namespaces=True, webhook=False, secret_label=True))


def _without_finalizers(rbac_: Rbac) -> Rbac:
    return Rbac(
        tuple(
            Grant(
                tuple(r for r in g.rules if "generationjobs/finalizers" not in r["resources"]),
                g.namespaces,
            )
            for g in rbac_.grants
        )
    )


def test_blocking_owner_references_need_the_finalizers_grant(enforcing) -> None:
    """The emulator's admission rule itself: without the grant, a child is refused as
    OpenShift refuses it."""
    cluster = enforcing({"clusterWide": True})
    emu = cluster.emu
    assert emu.rbac is not None
    emu.emulator.rbac = _without_finalizers(emu.rbac)
    owner = cluster.apply(example_job(NS))
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": NS}}
    kopf.adopt(child, owner)
    rsp = emu.http.post(
        f"/api/v1/namespaces/{NS}/configmaps",
        json=child,
        headers={"User-Agent": "draftgen-operator"},
    )
    assert rsp.status_code == 403
    assert (
        "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't "
        "set finalizers on" in rsp.json()["message"]
    )


# kopf's own kinds (its backbone) and whether the operator needs them in the chart's modes.
KOPF_KINDS_NOT_GRANTED = {
    ("", "namespaces"): "listed only for namespace globs; watchNamespaces takes exact names",
    ("zalando.org", "clusterkopfpeerings"): "legacy peering CRDs; the chart installs kopf.dev's",
    ("zalando.org", "kopfpeerings"): "legacy peering CRDs; the chart installs kopf.dev's",
}


def test_every_kind_kopf_manages_is_granted_or_excluded_with_a_reason() -> None:
    """A kopf upgrade that manages a new kind fails here instead of on a cluster."""
    granted = {
        (g, r)
        for mode in ((True, True), (False, True))
        for g, r, _ in rule_triples(rbac.rules(all_namespaces=mode[0], webhook=mode[1]))
    }
    from kopf._cogs.structs.references import Backbone  # kopf's own kinds: no public name

    for selector in Backbone().selectors:
        kind = (selector.group or "", selector.plural or selector.any_name)
        assert kind in granted or kind in KOPF_KINDS_NOT_GRANTED, f"kopf manages {kind}"
    assert not set(KOPF_KINDS_NOT_GRANTED) & granted


def test_a_refused_call_is_reported_on_the_job(enforcing) -> None:
    """Where the rules fall short (here: no finalizers grant under the admission plugin), the
    user sees why on the GenerationJob (`kubectl describe gj`), not only in the operator's log."""
    cluster = enforcing({"clusterWide": True})
    emu = cluster.emu
    assert emu.rbac is not None
    emu.emulator.rbac = _without_finalizers(emu.rbac)
    with running_operator():
        cluster.apply(example_job(NS))
        event = wait_for(
            lambda: next(
                (
                    r["data"]
                    for r in emu.requests()
                    if r["plural"] == "events"
                    and r["method"] == "POST"
                    and r["data"]["reason"] == "ReconcileError"
                ),
                None,
            ),
            "a ReconcileError Event",
        )
    assert event["type"] == "Warning"
    assert event["involvedObject"]["name"] == "kimi"
    assert "cannot set blockOwnerDeletion" in event["message"]
