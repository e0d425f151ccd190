"""values.yaml is documented value by value (helm-docs `# --`), and values.schema.json, which
Helm enforces on install, upgrade, template and lint, refuses wrong types and unknown keys."""

from __future__ import annotations

import json
import re

import helm_python as helm
import pytest
import yaml

from .rendering import CHART, render
from .values_cases import full_values

SCHEMA = json.loads((CHART / "values.schema.json").read_text())
DEFAULTS = yaml.safe_load((CHART / "values.yaml").read_text())

BAD_VALUES = [
    ({"bogus": 1}, "additional properties 'bogus'"),
    ({"operator": {"replica": 2}}, "additional properties 'replica'"),
    (
        {"monitoring": {"podMonitors": {"sglang": {"enable": True}}}},
        "additional properties 'enable'",
    ),
    ({"operator": {"replicas": "two"}}, "/operator/replicas"),
    ({"operator": {"replicas": 0}}, "/operator/replicas"),
    ({"operator": {"watchNamespaces": "team-a"}}, "/operator/watchNamespaces"),
    ({"operator": {"serverStartupSeconds": 600}}, "/operator/serverStartupSeconds"),
    ({"serverDefaults": {"memFractionStatic": 1.5}}, "/serverDefaults/memFractionStatic"),
    ({"serverDefaults": {"tensorParallelSize": "8"}}, "/serverDefaults/tensorParallelSize"),
    ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
    ({"monitoring": {"prometheusRule": {"enabled": "yes"}}}, "/monitoring/prometheusRule/enabled"),
    ({"monitoring": {"podMonitors": {"interval": "fast"}}}, "/monitoring/podMonitors/interval"),
    (
        {"monitoring": {"grafanaDashboard": {"labels": {"grafana_dashboard": 1}}}},
        "/monitoring/grafanaDashboard/labels/grafana_dashboard",
    ),
    ({"generationJobs": [{"name": "kimi"}]}, "missing property 'spec'"),
    ({"operator": {"webhook": {"enabled": True}}}, "/operator/webhook"),
    (
        {"generationJobs": [{"name": "Kimi_K2", "spec": {"model": {}, "datasets": []}}]},
        "/generationJobs/0/name",
    ),
    (
        {"generationJobs": [{"name": "kimi", "spec": {}, "replicas": 2}]},
        "additional properties 'replicas'",
    ),
]


@pytest.mark.parametrize("values,message", BAD_VALUES, ids=[m for _, m in BAD_VALUES])
def test_helm_refuses_bad_values_naming_the_key(values, message):
    with pytest.raises(helm.HelmValuesError) as err:
        render(values)
    assert message in str(err.value)


def test_defaults_and_full_values_pass_the_schema():
    with helm.Chart.load(CHART) as chart:
        chart.validate_schema({})
        chart.validate_schema(full_values())


def _leaves(values, schema, path=""):
    """(dotted path, schema node) of every value in values.yaml."""
    for key, value in values.items():
        node = schema["properties"].get(key)
        assert node is not None, f"{path}{key} is in values.yaml but not in values.schema.json"
        if isinstance(value, dict) and node.get("additionalProperties") is False:
            yield from _leaves(value, node, f"{path}{key}.")
        else:
            yield f"{path}{key}", node


def test_schema_and_values_describe_the_same_keys():
    in_values = {p for p, _ in _leaves(DEFAULTS, SCHEMA)}

    def schema_paths(node, path=""):
        for key, child in node["properties"].items():
            if child.get("type") == "object" and child.get("additionalProperties") is False:
                yield from schema_paths(child, f"{path}{key}.")
            else:
                yield f"{path}{key}"

    in_schema = set(schema_paths(SCHEMA))
    assert in_schema - in_values == set()
    assert in_values - in_schema == set()


def test_every_value_has_a_helm_docs_comment():
    """Each key is documented by a `# --` comment right above it, or by one on an ancestor that
    is documented as a whole (a map value such as `resources`)."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    documented: set[str] = set()
    stack: list[tuple[int, str]] = []
    undocumented = []
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)([A-Za-z0-9_.\-]+):", line)
        if not m or line.lstrip().startswith("#"):
            continue
        indent, key = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [key])
        stack.append((indent, key))
        j = i - 1
        while (
            j >= 0 and lines[j].strip().startswith("#") and not lines[j].strip().startswith("# --")
        ):
            j -= 1
        has_doc = j >= 0 and lines[j].strip().startswith("# --")
        is_parent = (
            i + 1 < len(lines)
            and re.match(rf"^\s{{{indent + 1},}}\S", lines[i + 1] or "")
            and not line.rstrip().endswith(("{}", "[]", '""'))
        )
        if has_doc:
            documented.add(path)
        elif not is_parent and not any(path.startswith(d + ".") for d in documented):
            undocumented.append(path)
    assert undocumented == []
    assert len(documented) >= 40
