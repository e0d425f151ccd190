"""Least privilege: the chart grants exactly the rules the operator declares it uses
(draftgen.controller.rbac), no more, and binds them where the operator watches."""

from __future__ import annotations

from draftgen.controller import rbac

from .rendering import of_kind, render

CLUSTER_SCOPED = {
    "customresourcedefinitions",
    "namespaces",
    "clusterkopfpeerings",
    "validatingwebhookconfigurations",
}


def _triples(rules) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def _granted(docs) -> set[tuple[str, str, str]]:
    return _triples(
        rule
        for kind in ("ClusterRole", "Role")
        for role in of_kind(docs, kind)
        for rule in role["rules"]
    )


def test_chart_grants_exactly_the_operator_rules():
    assert _granted(render()) == _triples(rbac.RULES)


def test_webhook_adds_exactly_the_webhook_rules():
    docs = render({"operator": {"webhook": {"enabled": True, "certSecret": "webhook-tls"}}})
    assert _granted(docs) == _triples(rbac.RULES + rbac.WEBHOOK_RULES)


def test_no_wildcards_and_no_secrets():
    for group, resource, verb in _granted(
        render({"operator": {"webhook": {"enabled": True, "certSecret": "webhook-tls"}}})
    ):
        assert "*" not in (group, resource, verb)
        assert resource != "secrets"


def test_cluster_scoped_rules_sit_apart_from_namespaced_ones():
    roles = {r["metadata"]["name"]: _triples(r["rules"]) for r in of_kind(render(), "ClusterRole")}
    cluster, namespaced = roles["dg-draftgen-operator-cluster"], roles["dg-draftgen-operator"]
    assert {res for _, res, _ in cluster} <= CLUSTER_SCOPED
    assert not {res for _, res, _ in namespaced} & CLUSTER_SCOPED


def test_watching_every_namespace_binds_cluster_wide():
    docs = render()
    bound = {b["roleRef"]["name"] for b in of_kind(docs, "ClusterRoleBinding")}
    assert bound == {"dg-draftgen-operator", "dg-draftgen-operator-cluster"}
    assert of_kind(docs, "RoleBinding") == []
    for binding in of_kind(docs, "ClusterRoleBinding"):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "dg-draftgen", "namespace": "draftgen"}
        ]


def test_watching_chosen_namespaces_binds_only_there():
    docs = render({"operator": {"watchNamespaces": ["team-a", "team-b"]}})
    assert {b["roleRef"]["name"] for b in of_kind(docs, "ClusterRoleBinding")} == {
        "dg-draftgen-operator-cluster"
    }
    bindings = of_kind(docs, "RoleBinding")
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["team-a", "team-b"]
    assert {b["roleRef"]["name"] for b in bindings} == {"dg-draftgen-operator"}
