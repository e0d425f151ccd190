"""The chart renders with real Helm (helm-python-sdk, offline) with default values, with every
toggle on and non-default values, and with each toggle alone; every manifest passes strict
Kubernetes 1.30 validation (GenerationJobs: the shipped CRD schema; prometheus-operator kinds: a
structural check); `helm lint` finds nothing."""

from __future__ import annotations

import json
from collections import Counter

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from .rendering import CHART, NAMESPACE, chart_crds, of_kind, one, render, validate
from .values_cases import TOGGLES, full_values

CASES = {"defaults": {}, "full": full_values(), **{f"only-{k}": v for k, v in TOGGLES.items()}}


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict]]:
    return {case: render(values) for case, values in CASES.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_every_manifest_validates(rendered, case):
    docs = rendered[case]
    assert docs
    for doc in docs:
        validate(doc)
    keys = Counter((d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs)
    assert [k for k, n in keys.items() if n > 1] == []


def test_validation_catches_a_broken_manifest(rendered):
    """The validator used above does reject what Kubernetes would reject."""
    deployment = one(rendered["defaults"], "Deployment")
    broken = json.loads(json.dumps(deployment))
    broken["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(broken)
    job = json.loads(json.dumps(one(rendered["only-generationJobs"], "GenerationJob")))
    job["spec"]["server"]["memFractionStatic"] = 1.5  # a copy: `rendered` is shared
    with pytest.raises(Exception, match="memFractionStatic|maximum|less than"):
        validate(job)


def test_defaults_install_the_operator_only(rendered):
    kinds = Counter(d["kind"] for d in rendered["defaults"])
    assert kinds == Counter(
        {
            "Deployment": 1,
            "ServiceAccount": 1,
            "Service": 1,
            "Role": 1,
            "RoleBinding": 1,
            "PodDisruptionBudget": 1,
            "KopfPeering": 1,
        }
    )


def test_full_values_install_every_optional_object(rendered):
    docs = rendered["full"]
    kinds = Counter(d["kind"] for d in docs)
    assert kinds["ServiceMonitor"] == 1 and kinds["PodMonitor"] == 2
    assert kinds["PrometheusRule"] == 1 and kinds["GenerationJob"] == 2
    assert kinds["KopfPeering"] == 2 and kinds["ClusterKopfPeering"] == 0
    assert {d["metadata"]["name"] for d in of_kind(docs, "Service")} == {
        "drafts-operator-metrics",
        "drafts-webhook",
    }
    dashboard = [
        d for d in of_kind(docs, "ConfigMap") if d["metadata"]["name"] == "drafts-dashboard"
    ]
    assert dashboard and dashboard[0]["metadata"]["namespace"] == "monitoring"


def test_each_toggle_adds_exactly_its_objects(rendered):
    base = Counter(d["kind"] for d in rendered["defaults"])
    added = {
        case: Counter(d["kind"] for d in rendered[case]) - base
        for case in rendered
        if case.startswith("only-")
    }
    assert added["only-serviceMonitor"] == Counter({"ServiceMonitor": 1})
    assert added["only-podMonitor-generator"] == Counter({"PodMonitor": 1})
    assert added["only-podMonitor-sglang"] == Counter({"PodMonitor": 1})
    assert added["only-prometheusRule"] == Counter({"PrometheusRule": 1})
    assert added["only-grafanaDashboard"] == Counter({"ConfigMap": 1})
    # The webhook's configurations are cluster-scoped: its ClusterRole comes with it.
    assert added["only-webhook"] == Counter(
        {"Service": 1, "ClusterRole": 1, "ClusterRoleBinding": 1}
    )
    assert added["only-generationJobs"] == Counter({"GenerationJob": 1})
    assert "PodDisruptionBudget" not in Counter(d["kind"] for d in rendered["only-one-replica"])
    assert not {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount"} & {
        d["kind"] for d in rendered["only-no-rbac-no-sa"]
    }
    assert "KopfPeering" not in {d["kind"] for d in rendered["only-no-peering-object"]}


def test_chart_ships_the_crds_kopf_and_the_operator_need():
    crds = chart_crds()
    names = {c["metadata"]["name"] for c in crds}
    assert names == {
        "generationjobs.draftgen.io",
        "clusterkopfpeerings.kopf.dev",
        "kopfpeerings.kopf.dev",
    }
    for crd in crds:
        kubernetes_validate.validate(crd, "1.30", strict=True)


def test_peering_crds_are_the_ones_the_installed_kopf_looks_for():
    """kopf finds its peering resources by selector; the shipped CRDs must match the ones it
    tries first (kopf.dev), cluster-wide and namespaced."""
    from kopf._cogs.structs import references

    resources = [
        references.Resource(
            group=c["spec"]["group"],
            version=v["name"],
            plural=c["spec"]["names"]["plural"],
            kind=c["spec"]["names"]["kind"],
            singular=c["spec"]["names"]["singular"],
            namespaced=c["spec"]["scope"] == "Namespaced",
        )
        for c in chart_crds()
        if c["spec"]["group"] != "draftgen.io"
        for v in c["spec"]["versions"]
    ]
    cluster = [r for r in resources if references.CLUSTER_PEERINGS_K.check(r)]
    namespaced = [r for r in resources if references.NAMESPACED_PEERINGS_K.check(r)]
    assert len(cluster) == 1 and cluster[0].namespaced is False
    assert len(namespaced) == 1 and namespaced[0].namespaced is True


@pytest.mark.parametrize("case", ["defaults", "full"])
def test_helm_lint_is_clean(case):
    report = helm.lint(CHART, CASES[case], strict=True, namespace=NAMESPACE, kube_version="v1.30.0")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert problems == [] and report["errors"] == []


def test_operator_pods_are_locked_down(rendered):
    for case in ("defaults", "full"):
        pod = one(rendered[case], "Deployment")["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == 10001  # the image's user (Dockerfile)
        container = pod["containers"][0]
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        }
        assert container["args"] == ["operator"]
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_prometheus_rule_is_the_alerts_file_verbatim(rendered):
    rule = one(rendered["full"], "PrometheusRule")
    source = yaml.safe_load((CHART / "files" / "alerts.yaml").read_text())
    assert rule["spec"]["groups"] == source["groups"]
    assert rule["metadata"]["labels"]["release"] == "kps"


def test_dashboard_configmap_is_the_dashboard_file_with_the_sidecar_label(rendered):
    cm = one(rendered["only-grafanaDashboard"], "ConfigMap")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["namespace"] == NAMESPACE
    source = json.loads((CHART / "files" / "dashboard.json").read_text())
    assert json.loads(cm["data"]["draftgen.json"]) == source


def test_chart_app_version_is_the_package_version(repo):
    import tomllib

    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((repo / "pyproject.toml").read_text())["project"]
    assert chart["appVersion"] == project["version"]


def test_sglang_pod_monitor_keeps_sglang_metric_names(rendered):
    """Prometheus 2.x asks for OpenMetrics 1.0 first, and SGLang's prometheus_client then
    answers `sglang_token_usage`; the monitor renames them back to `sglang:token_usage`, the names
    the alerts and the dashboard read (tests/alerts/test_live_prometheus.py shows it live)."""
    import re

    monitors = {m["metadata"]["name"]: m for m in of_kind(rendered["full"], "PodMonitor")}
    (rule,) = monitors["drafts-sglang"]["spec"]["podMetricsEndpoints"][0]["metricRelabelings"]
    assert rule["sourceLabels"] == ["__name__"] and rule["targetLabel"] == "__name__"
    regex = re.compile(rf"^(?:{rule['regex']})$")
    assert (
        regex.sub(rule["replacement"].replace("$1", r"\1"), "sglang_token_usage")
        == "sglang:token_usage"
    )
    assert not regex.match("sglang:token_usage")
    assert "metricRelabelings" not in monitors["drafts-generator"]["spec"]["podMetricsEndpoints"][0]
