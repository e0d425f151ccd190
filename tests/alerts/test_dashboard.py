"""The Grafana dashboard (charts/draftgen/files/dashboard.json) shows what the issue asks for,
every query is valid PromQL, and every metric a query or an alert reads is one the generator
defines (draftgen/contract/metrics.py, docs/metrics.md) or SGLang exports: a renamed metric must
fail here, not read zero silently on a dashboard (field facts, lesson 8)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from draftgen.contract import metrics

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
    return [(p["title"], fill_variables(t["expr"])) for p in PANELS for t in p["targets"]]


def fill_variables(expr: str) -> str:
    """A query as Grafana sends it with every variable at "All"."""
    return (
        expr.replace("$namespace", ".*")
        .replace("$generationjob", ".*")
        .replace("$generator_job", "draftgen-generator")
        .replace("$sglang_job", "draftgen-sglang")
    )


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
    return {m.name for m in metrics.ALL}


def _operator_metrics() -> set[str]:
    from draftgen.controller import metrics as operator_metrics

    return {family.name for family in operator_metrics.REGISTRY.collect()}


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
    kv = next(p for p in PANELS if p["title"].lower() == "kv cache usage and queue")
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
    assert variables == {"datasource", "generator_job", "sglang_job", "namespace", "generationjob"}


def test_the_job_label_is_a_variable_not_hard_coded():
    """Issue 30, item 12: a Prometheus that scrapes draftgen under other job names picks them in
    the dashboard; the defaults are the chart's PodMonitors' job labels."""
    for title, target in ((p["title"], t) for p in PANELS for t in p["targets"]):
        assert 'job="' not in target["expr"], title
    jobs = {v["name"]: v for v in DASHBOARD["templating"]["list"]}
    assert jobs["generator_job"]["current"]["value"] == "draftgen-generator"
    assert jobs["sglang_job"]["current"]["value"] == "draftgen-sglang"
    assert jobs["generator_job"]["query"]["query"] == "label_values(draftgen_job_done, job)"


def test_every_metric_read_is_promised_by_its_producer():
    contract = _contract_metrics()
    assert len(contract) >= 10, "docs/metrics.md table not found"
    exprs = [e for _, e in dashboard_exprs()]
    exprs += [r["expr"] for g in ALERTS["groups"] for r in g["rules"]]
    for expr in exprs:
        for name in _metric_names(expr):
            if name.startswith("draftgen_operator_"):
                assert name in _operator_metrics(), f"{name} is not in operator/metrics.py"
            elif name.startswith("draftgen_"):
                assert name in contract, f"{name} is not in draftgen/contract/metrics.py"
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


def _selectors(expr: str) -> list[tuple[str, str]]:
    """(metric, its `{...}` matchers) of every selector in an expression."""
    return re.findall(r"\b((?:draftgen|sglang)[a-z0-9_:]*)\{([^}]*)\}", expr)


def test_every_job_series_is_selected_by_namespace_and_generationjob():
    """Choosing a GenerationJob narrows every draftgen and SGLang query to it (both carry the
    label: the generator sets it, the SGLang PodMonitor relabels it from the pod)."""
    missing = []
    for p in PANELS:
        for t in p["targets"]:
            for metric, matchers in _selectors(t["expr"]):
                if 'namespace=~"$namespace"' not in matchers or (
                    'generationjob=~"$generationjob"' not in matchers
                ):
                    missing.append(f"{p['title']}: {metric}{{{matchers}}}")
    assert missing == []
    job = next(v for v in DASHBOARD["templating"]["list"] if v["name"] == "generationjob")
    assert "generationjob)" in job["query"]["query"] and "$namespace" in job["query"]["query"]
    assert job["includeAll"] and job["multi"]


def test_the_summary_row_answers_when_and_is_it_saturated():
    top = sorted((p for p in PANELS if p["gridPos"]["y"] == 0), key=lambda p: p["gridPos"]["x"])
    titles = [p["title"].lower() for p in top]
    for topic in ("budget used", "finish time", "tokens/s", "saturated"):
        assert any(topic in t for t in titles), topic
    assert sum(p["gridPos"]["w"] for p in top) == 24
    by_title = {p["title"].lower(): p for p in top}
    finish = next(p for t, p in by_title.items() if "finish time" in t)
    assert finish["fieldConfig"]["defaults"]["unit"].startswith("dateTime")
    rate = next(p for t, p in by_title.items() if "tokens/s" in t)
    assert metrics.COMPLETION_TOKENS_PER_SECOND.name in rate["targets"][0]["expr"]


def test_the_saturation_verdict_is_the_alerts_own():
    """The summary's "Saturated" is DraftgenKVCacheSaturated's condition (usage above 0.9 over
    5 minutes AND a queue non-empty and growing over 10), not a second opinion."""
    panel = next(p for p in PANELS if p["title"] == "Saturated")
    expr = fill_variables(panel["targets"][0]["expr"])
    rule = next(
        r
        for g in ALERTS["groups"]
        for r in g["rules"]
        if r.get("alert") == "DraftgenKVCacheSaturated"
    )
    for piece in (
        "avg_over_time(sglang:token_usage{",
        "[5m])) > 0.9",
        "min_over_time(sglang:num_queue_reqs{",
        "deriv(sglang:num_queue_reqs{",
        "[10m])) > 0",
    ):
        assert piece in rule["expr"], piece
        assert piece.replace(" > ", " > bool ") in expr or piece in expr, piece
    # Per data-parallel rank, as the alert: one rank can saturate while the mean looks fine.
    for clause in ("by (namespace, pod, dp_rank)", "on (namespace, pod, dp_rank)"):
        assert clause in rule["expr"] and clause in expr, clause
    mapped = panel["fieldConfig"]["defaults"]["mappings"][0]["options"]
    assert mapped["1"]["text"] == "SATURATED"


def test_per_dataset_samples_throughput_and_eta_panels():
    for title, metric in (
        ("samples per dataset", "draftgen_samples_total"),
        ("throughput per dataset", "draftgen_completion_tokens_total"),
        ("eta per dataset", "draftgen_budget_remaining_completion_tokens"),
    ):
        panel = next(p for p in PANELS if p["title"].lower() == title)
        exprs = " ".join(t["expr"] for t in panel["targets"])
        assert metric in exprs and "by (generationjob, dataset)" in exprs, title


def test_gauges_and_shares_have_an_explicit_0_to_1_range():
    """A gauge without a range scales to its own value and always looks full."""
    for p in PANELS:
        defaults = p["fieldConfig"]["defaults"]
        overrides = [
            {prop["id"]: prop.get("value") for prop in o["properties"]}
            for o in p["fieldConfig"]["overrides"]
        ]
        ranged = (defaults.get("min"), defaults.get("max")) == (0, 1) or any(
            (o.get("min"), o.get("max")) == (0, 1) for o in overrides
        )
        if p["type"] in ("gauge", "bargauge") or defaults.get("unit") == "percentunit":
            assert ranged, p["title"]
