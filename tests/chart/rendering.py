"""Render the chart with real Helm (helm-python-sdk, offline) and validate what comes out."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import helm_python as helm
import jsonschema
import kubernetes_validate
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "draftgen"
KUBE_VERSION = "1.30"
RELEASE, NAMESPACE = "dg", "draftgen"


def render(
    values: dict[str, Any] | None = None, *, name: str = RELEASE, namespace: str = NAMESPACE
) -> list[dict[str, Any]]:
    """Every object the chart would install (templates only; crds/ are separate), in order."""
    with helm.Chart.load(CHART) as chart:
        manifests = chart.render(values or {}, name=name, namespace=namespace)
    docs = []
    for path in sorted(manifests):
        if path.endswith("NOTES.txt"):
            continue
        docs += [d for d in yaml.safe_load_all(manifests[path]) if d]
    return docs


def chart_crds() -> list[dict[str, Any]]:
    with helm.Chart.load(CHART) as chart:
        return [d for c in chart.crds for d in yaml.safe_load_all(c["data"]) if d]


def of_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = of_kind(docs, kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def _crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) → openAPIV3Schema of every CRD the chart ships."""
    out = {}
    for crd in chart_crds():
        spec = crd["spec"]
        for version in spec["versions"]:
            out[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = version["schema"][
                "openAPIV3Schema"
            ]
    return out


# prometheus-operator kinds are not built in and their CRDs are not ours: check their structure.
_MONITORING_SPEC_KEYS = {
    "ServiceMonitor": {"selector", "endpoints"},
    "PodMonitor": {"selector", "podMetricsEndpoints"},
    "PrometheusRule": {"groups"},
}


def validate(doc: dict[str, Any]) -> None:
    """Strict Kubernetes 1.30 schema for built-in kinds, the shipped CRD schema for ours, a
    structural check for prometheus-operator kinds. Raises on anything wrong."""
    api_group = doc["apiVersion"].split("/")[0]
    kind = doc["kind"]
    meta = doc["metadata"]
    assert meta.get("name"), f"{kind} without a name"
    if api_group == "monitoring.coreos.com":
        assert doc["apiVersion"] == "monitoring.coreos.com/v1", doc["apiVersion"]
        missing = _MONITORING_SPEC_KEYS[kind] - doc["spec"].keys()
        assert not missing, f"{kind} {meta['name']}: spec lacks {missing}"
        assert set(doc) <= {"apiVersion", "kind", "metadata", "spec"}, set(doc)
        return
    crds = _crd_schemas()
    if (doc["apiVersion"], kind) in crds:
        # jsonschema ignores x-kubernetes-* extensions; the CRD is structural OpenAPI v3.
        jsonschema.Draft4Validator(crds[(doc["apiVersion"], kind)]).validate(doc)
        return
    kubernetes_validate.validate(copy.deepcopy(doc), KUBE_VERSION, strict=True)
