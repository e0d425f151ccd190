"""Least privilege: the chart grants exactly the rules the operator declares it uses
(draftgen.controller.rbac) in each mode — every namespace, chosen namespaces, the webhook on —
no more, and binds them where the operator watches. (tests/operator/test_rbac_modes.py checks
those rules against what the operator really calls.)"""

from __future__ import annotations

import pytest

from draftgen.controller import rbac

from .rendering import of_kind, render

CLUSTER_SCOPED = {
    "customresourcedefinitions",
    "namespaces",
    "clusterkopfpeerings",
    "validatingwebhookconfigurations",
    "mutatingwebhookconfigurations",
}
WEBHOOK = {"webhook": {"enabled": True, "certSecret": "webhook-tls"}}
CHOSEN = {"watchNamespaces": ["team-a", "team-b"]}
SECRET_LABEL = {"policy": {"secretLabel": "draftgen.io/usable=true"}}
MODES = {
    "all namespaces": ({}, dict(all_namespaces=True, webhook=False)),
    "chosen namespaces": (CHOSEN, dict(all_namespaces=False, webhook=False)),
    "all namespaces, webhook": (WEBHOOK, dict(all_namespaces=True, webhook=True)),
    "chosen namespaces, webhook": ({**CHOSEN, **WEBHOOK}, dict(all_namespaces=False, webhook=True)),
    "all namespaces, secret label": (
        SECRET_LABEL,
        dict(all_namespaces=True, webhook=False, secret_label=True),
    ),
    "chosen namespaces, secret label": (
        {**CHOSEN, **SECRET_LABEL},
        dict(all_namespaces=False, webhook=False, secret_label=True),
    ),
}


def grants(rules) -> set[tuple[str, str, str, str | None]]:
    """(group, resource, verb, resourceName or None) of every rule."""
    return {
        (group, resource, verb, name)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
        for name in rule.get("resourceNames") or [None]
    }


def _roles(docs) -> dict[str, set]:
    return {r["metadata"]["name"]: grants(r["rules"]) for r in of_kind(docs, "ClusterRole")}


@pytest.mark.parametrize("mode", MODES)
def test_chart_grants_exactly_the_operator_rules_in_each_mode(mode):
    values, kwargs = MODES[mode]
    roles = _roles(render({"operator": values}))
    assert of_kind(render({"operator": values}), "Role") == []
    assert roles.pop("dg-draftgen-operator") == grants(
        rbac.namespaced_rules(
            all_namespaces=kwargs["all_namespaces"], secret_label=kwargs.get("secret_label", False)
        )
    )
    assert roles.pop("dg-draftgen-operator-cluster", set()) == grants(
        rbac.cluster_rules(all_namespaces=kwargs["all_namespaces"], webhook=kwargs["webhook"])
    )
    assert roles == {}


def test_the_default_is_rbac_rules():
    assert set().union(*_roles(render()).values()) == grants(rbac.RULES)


def test_no_wildcards_and_secrets_only_read_for_the_label_policy():
    for values, kwargs in MODES.values():
        granted = set().union(*_roles(render({"operator": values})).values())
        for group, resource, verb, _ in granted:
            assert "*" not in (group, resource, verb)
        secrets = {verb for _, resource, verb, _ in granted if resource == "secrets"}
        assert secrets == ({"get"} if kwargs.get("secret_label") else set())


@pytest.mark.parametrize("mode", MODES)
def test_cluster_scoped_rules_sit_apart_from_namespaced_ones(mode):
    roles = _roles(render({"operator": MODES[mode][0]}))
    cluster = roles.get("dg-draftgen-operator-cluster", set())
    namespaced = roles["dg-draftgen-operator"]
    assert {res for _, res, _, _ in cluster} <= CLUSTER_SCOPED
    assert not {res for _, res, _, _ in namespaced} & CLUSTER_SCOPED


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
    docs = render({"operator": CHOSEN})
    # Nothing cluster-scoped is needed (no scanning, peering per namespace): no ClusterRoleBinding.
    assert of_kind(docs, "ClusterRoleBinding") == []
    bindings = of_kind(docs, "RoleBinding")
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["team-a", "team-b"]
    assert {b["roleRef"]["name"] for b in bindings} == {"dg-draftgen-operator"}
    with_webhook = render({"operator": {**CHOSEN, **WEBHOOK}})
    assert {b["roleRef"]["name"] for b in of_kind(with_webhook, "ClusterRoleBinding")} == {
        "dg-draftgen-operator-cluster"
    }
