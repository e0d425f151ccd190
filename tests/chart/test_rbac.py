"""Least privilege: the chart grants exactly the rules the operator declares it uses
(draftgen.controller.rbac) in each mode — the release's namespace (the default), chosen
namespaces, every namespace (`operator.clusterWide`), the webhook on — no more, and binds them
only where the operator serves: Roles and RoleBindings in each namespace it serves, a
ClusterRoleBinding only by explicit choice. (tests/operator/test_rbac_modes.py checks those
rules against what the operator really calls.)"""

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
EVERY = {"clusterWide": True}
SECRET_LABEL = {"policy": {"secretLabel": "draftgen.io/usable=true"}}
MODES = {
    "release namespace": ({}, dict(all_namespaces=False, webhook=False)),
    "chosen namespaces": (CHOSEN, dict(all_namespaces=False, webhook=False)),
    "all namespaces": (EVERY, dict(all_namespaces=True, webhook=False)),
    "all namespaces, webhook": ({**EVERY, **WEBHOOK}, dict(all_namespaces=True, webhook=True)),
    "chosen namespaces, webhook": ({**CHOSEN, **WEBHOOK}, dict(all_namespaces=False, webhook=True)),
    "all namespaces, secret label": (
        {**EVERY, **SECRET_LABEL},
        dict(all_namespaces=True, webhook=False, secret_label=True),
    ),
    "chosen namespaces, secret label": (
        {**CHOSEN, **SECRET_LABEL},
        dict(all_namespaces=False, webhook=False, secret_label=True),
    ),
}
SERVED = {
    "release namespace": ["draftgen"],
    "chosen namespaces": ["team-a", "team-b"],
    "chosen namespaces, webhook": ["team-a", "team-b"],
    "chosen namespaces, secret label": ["team-a", "team-b"],
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
    """Rules by role name; a namespaced Role must say the same in every namespace."""
    out: dict[str, set] = {}
    for role in of_kind(docs, "ClusterRole") + of_kind(docs, "Role"):
        rules = grants(role["rules"])
        assert out.setdefault(role["metadata"]["name"], rules) == rules
    return out


@pytest.mark.parametrize("mode", MODES)
def test_chart_grants_exactly_the_operator_rules_in_each_mode(mode):
    values, kwargs = MODES[mode]
    docs = render({"operator": values})
    roles = _roles(docs)
    assert roles.pop("dg-draftgen-operator") == grants(
        rbac.namespaced_rules(
            all_namespaces=kwargs["all_namespaces"], secret_label=kwargs.get("secret_label", False)
        )
    )
    assert roles.pop("dg-draftgen-operator-cluster", set()) == grants(
        rbac.cluster_rules(all_namespaces=kwargs["all_namespaces"], webhook=kwargs["webhook"])
    )
    assert roles == {}
    # Namespaced rights sit in a Role in each served namespace, never in a ClusterRole.
    namespaced = {r["metadata"]["name"] for r in of_kind(docs, "ClusterRole")}
    assert ("dg-draftgen-operator" in namespaced) == kwargs["all_namespaces"]
    if mode in SERVED:
        assert sorted(r["metadata"]["namespace"] for r in of_kind(docs, "Role")) == SERVED[mode]


def test_the_default_is_rbac_rules():
    assert set().union(*_roles(render()).values()) == grants(rbac.RULES)


def test_the_default_reaches_no_namespace_but_the_releases():
    """Out of the box nothing is bound cluster-wide: no create/patch/delete of Deployments,
    Jobs, Services, ConfigMaps or NetworkPolicies in kube-system or any other namespace."""
    docs = render()
    assert of_kind(docs, "ClusterRoleBinding") == []
    assert of_kind(docs, "ClusterRole") == []
    assert [(b["metadata"]["namespace"], b["roleRef"]) for b in of_kind(docs, "RoleBinding")] == [
        (
            "draftgen",
            {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "dg-draftgen-operator",
            },
        )
    ]


def test_every_namespace_and_chosen_namespaces_exclude_each_other():
    with pytest.raises(Exception, match="operator.clusterWide"):
        render({"operator": {**EVERY, **CHOSEN}})


def test_no_wildcards_and_secrets_only_watched_for_the_label_policy():
    for values, kwargs in MODES.values():
        granted = set().union(*_roles(render({"operator": values})).values())
        for group, resource, verb, _ in granted:
            assert "*" not in (group, resource, verb)
        secrets = {verb for _, resource, verb, _ in granted if resource == "secrets"}
        # Listed and watched with the label selector (the cache), never one by one.
        assert secrets == ({"list", "watch"} if kwargs.get("secret_label") else set())


@pytest.mark.parametrize("mode", MODES)
def test_cluster_scoped_rules_sit_apart_from_namespaced_ones(mode):
    roles = _roles(render({"operator": MODES[mode][0]}))
    cluster = roles.get("dg-draftgen-operator-cluster", set())
    namespaced = roles["dg-draftgen-operator"]
    assert {res for _, res, _, _ in cluster} <= CLUSTER_SCOPED
    assert not {res for _, res, _, _ in namespaced} & CLUSTER_SCOPED


def test_watching_every_namespace_binds_cluster_wide():
    docs = render({"operator": EVERY})
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
    assert {(b["roleRef"]["kind"], b["roleRef"]["name"]) for b in bindings} == {
        ("Role", "dg-draftgen-operator")
    }
    with_webhook = render({"operator": {**CHOSEN, **WEBHOOK}})
    assert {b["roleRef"]["name"] for b in of_kind(with_webhook, "ClusterRoleBinding")} == {
        "dg-draftgen-operator-cluster"
    }
