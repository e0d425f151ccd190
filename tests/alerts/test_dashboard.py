"""The Grafana dashboard (charts/draftgen/files/dashboard.json) shows what the issue asks for,
every query is valid PromQL, and every metric a query or an alert reads is one the generator
promises (docs/metrics.md) or SGLang exports: a renamed metric must fail here, not read zero
silently on a dashboard (field facts, lesson 8)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = json.loads((REPO / "charts" / "draftgen" / "files" / "dashboard.json").read_text())
ALERTS = yaml.safe_load((REPO / "charts" / "draftgen" / "files" / "alerts.yaml").read_text())
PANELS = DASHBOARD["panels"]

# SGLang metrics draftgen relies on (sglang 0.5.x, `--enable-metrics`; see shared notes).
SGLANG_METRICS = {
    "sglang:token_usage",
    "sglang:num_queue_reqs",
    "sglang:num_running_reqs",
    "sglang:gen_throughput",
    "sglang:generation_tokens_total",
    "sglang:num_requests_total",
    "sglang:time_to_first_token_seconds",
    "sglang:request_time_per_output_token_seconds",
    "sglang:queue_time_seconds",
}
KUBE_STATE_METRICS = {
    "kube_pod_container_status_restarts_total",
    "kube_pod_container_status_last_terminated_reason",
}
SUFFIXES = ("_bucket", "_sum", "_count")


def dashboard_exprs() -> list[tuple[str, str]]:
    """(panel title, expression with the dashboard variables filled as "All")."""
    return [
        (p["title"], t["expr"].replace("$namespace", ".*")) for p in PANELS for t in p["targets"]
    ]


def _metric_names(expr: str) -> set[str]:
    names = set(re.findall(r"\b((?:draftgen|sglang|kube)[a-z0-9_:]*)\s*[{\[(]", expr))
    out = set()
    for name in names:
        for suffix in SUFFIXES:
            if name.endswith(suffix) and not name.endswith("_total"):
                name = name[: -len(suffix)]
        out.add(name)
    return out


def _contract_metrics() -> set[str]:
    text = (REPO / "docs" / "metrics.md").read_text()
    return set(re.findall(r"^\| `(draftgen_[a-z_]+)` \|", text, re.M))


def test_dashboard_has_the_panels_the_issue_asks_for():
    titles = " | ".join(p["title"].lower() for p in PANELS)
    for topic in (
        "throughput",
        "kv cache",
        "queue",
        "running",
        "budget",
        "eta",
        "latency",
        "truncation",
        "rejects",
        "restarts",
    ):
        assert topic in titles, topic
    kv = next(p for p in PANELS if "kv cache" in p["title"].lower())
    exprs = " ".join(t["expr"] for t in kv["targets"])
    assert "sglang:token_usage" in exprs and "sglang:num_queue_reqs" in exprs
    budget = " ".join(
        t["expr"] for p in PANELS if "budget" in p["title"].lower() for t in p["targets"]
    )
    assert (
        "draftgen_budget_completion_tokens" in budget
        and "draftgen_completion_tokens_total" in budget
    )


def test_panels_are_well_formed_and_do_not_overlap():
    ids = [p["id"] for p in PANELS]
    assert len(ids) == len(set(ids))
    cells = set()
    for p in PANELS:
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["description"] and p["targets"], p["title"]
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']} overlaps another panel"
                cells.add((x, y))
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), p["title"]
    variables = {v["name"] for v in DASHBOARD["templating"]["list"]}
    assert variables == {"datasource", "namespace"}


def test_every_metric_read_is_promised_by_its_producer():
    contract = _contract_metrics()
    assert len(contract) >= 10, "docs/metrics.md table not found"
    exprs = [e for _, e in dashboard_exprs()]
    exprs += [r["expr"] for g in ALERTS["groups"] for r in g["rules"]]
    for expr in exprs:
        for name in _metric_names(expr):
            if name.startswith("draftgen_"):
                assert name in contract, f"{name} is not in docs/metrics.md"
            elif name.startswith("sglang:"):
                assert name in SGLANG_METRICS, name
            else:
                assert name in KUBE_STATE_METRICS, name


def test_sglang_metrics_exist_in_the_installed_sglang():
    """The SGLang names above are the ones the installed SGLang registers (when it is installed)."""
    collectors = list(
        (REPO / ".cache").glob(
            "venv-sglang/lib/python3*/site-packages/sglang/srt/**/metrics_collector.py"
        )
    )
    if not collectors:
        pytest.skip("SGLang is not installed in .cache/venv-sglang (make sglang)")
    registered = set()
    for path in collectors:
        registered |= set(re.findall(r'name="(sglang:[a-z_]+)"', path.read_text()))
    for name in SGLANG_METRICS:
        base = name.removesuffix("_total")
        assert name in registered or base in registered, name


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed: make system")
def test_every_dashboard_query_is_valid_promql(tmp_path):
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:query_{i}", "expr": expr}
                    for i, (_, expr) in enumerate(dashboard_exprs())
                ],
            }
        ]
    }
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump(rules))
    result = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
