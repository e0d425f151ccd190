"""Live: a real Prometheus (Debian's `prometheus`, loopback, 1 s scrapes) scrapes a real SGLang
server on the CPU and a running `draftgen generate` during a short job; afterwards every query of
every dashboard panel returns data through Prometheus's HTTP API, and every alert rule evaluates
without error against the real series."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from draftgen.contract import metrics
from tests.jobs import dataset, job_document, kimi_like_model, write_job_yaml

from .prometheus import PROMETHEUS, PrometheusServer, free_port
from .test_dashboard import fill_variables

REPO = Path(__file__).resolve().parents[2]
FILES = REPO / "charts" / "draftgen" / "files"
NAMESPACE = "draftgen-live"

pytestmark = [
    pytest.mark.sglang,
    pytest.mark.long,
    pytest.mark.skipif(PROMETHEUS is None, reason="prometheus not installed: run `make system`"),
]

# Targets that return data only when their event happens or their exporter exists; each is
# named with the reason, and everything else must return data.
MAY_BE_EMPTY = {
    "kube_pod_container_status_restarts_total": "kube-state-metrics runs only in a cluster",
}
JOB = "live"


@pytest.fixture(scope="module")
def server(sglang_server):
    """The session's shared tiny-kimi SGLang server (tests/conftest.py)."""
    return sglang_server


def _job(tmp: Path, model: Path) -> Path:
    """A short job: two datasets with token budgets, one with two malformed rows (rejects),
    a small maxNewTokens (samples truncate), long enough (several seconds of budget left) for
    the rate-based panels to see two or more 1-second scrapes."""
    data = tmp / "data"
    data.mkdir()
    shutil.copy(REPO / "examples" / "data" / "prompts.jsonl", data / "prompts.jsonl")
    chat = (REPO / "examples" / "data" / "chat.jsonl").read_text().splitlines()
    chat[3:3] = ['{"id": "broken", "messages": [', '{"id": "empty", "messages": []}']
    (data / "chat.jsonl").write_text("\n".join(chat) + "\n")
    return write_job_yaml(
        tmp / "job.yaml",
        job_document(
            "live",
            model=kimi_like_model(model),
            server={"tensorParallelSize": 1},
            sampling={"temperature": 1.0, "maxNewTokens": 24},
            generator={"concurrency": {"mode": "fixed", "maxRequests": 6}},
            output={"path": "out"},
            datasets=[
                dataset("chat", "data/chat.jsonl", "messages", budget={"completionTokens": 500}),
                dataset(
                    "prompts", "data/prompts.jsonl", "prompt", budget={"completionTokens": 500}
                ),
            ],
        ),
    )


def _chart_pod_monitors() -> dict[str, dict]:
    """The chart's PodMonitor endpoints by scrape job, as the chart renders them."""
    import helm_python as helm

    with helm.Chart.load(FILES.parent) as chart:
        manifests = chart.render(
            {
                "monitoring": {
                    "podMonitors": {"sglang": {"enabled": True}, "generator": {"enabled": True}}
                }
            },
            name="live",
            namespace=NAMESPACE,
        )
    out = {}
    for d in yaml.safe_load_all(manifests["draftgen/templates/podmonitors.yaml"]):
        if d and d["kind"] == "PodMonitor":
            endpoint = d["spec"]["podMetricsEndpoints"][0]
            job = next(
                r["replacement"] for r in endpoint["relabelings"] if r["targetLabel"] == "job"
            )
            out[job] = endpoint
    return out


def _chart_sglang_metric_relabelings() -> list[dict]:
    """The SGLang PodMonitor's metricRelabelings as the chart renders them, in Prometheus's own
    configuration spelling: the live scrape treats SGLang's names exactly as a cluster would."""
    snake = {"sourceLabels": "source_labels", "targetLabel": "target_label"}
    return [
        {snake.get(k, k): v for k, v in rule.items()}
        for rule in _chart_pod_monitors()["draftgen-sglang"]["metricRelabelings"]
    ]


def _panel_targets() -> list[tuple[str, str, str]]:
    dashboard = json.loads((FILES / "dashboard.json").read_text())
    return [
        (p["title"], t["refId"], fill_variables(t["expr"]))
        for p in dashboard["panels"]
        for t in p["targets"]
    ]


@pytest.fixture(scope="module")
def live_run(server, tiny_kimi, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("live-prometheus")
    url = urlparse(server.url)
    metrics_port = free_port()
    targets = {
        # generationjob: what the SGLang PodMonitor relabels from the pod's draftgen.io/job label
        "draftgen-sglang": (
            f"{url.hostname}:{url.port}",
            {"namespace": NAMESPACE, "pod": "live-server-0", "generationjob": JOB},
        ),
        "draftgen-generator": (
            f"127.0.0.1:{metrics_port}",
            {"namespace": NAMESPACE, "pod": "live-generator-x"},
        ),
    }
    relabel = {"draftgen-sglang": _chart_sglang_metric_relabelings()}
    honor = {job: bool(e.get("honorLabels")) for job, e in _chart_pod_monitors().items()}
    with PrometheusServer(
        tmp,
        targets,
        rule_files=[FILES / "alerts.yaml"],
        metric_relabel_configs=relabel,
        honor_labels=honor,
    ) as prom:
        start = time.time()
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "draftgen.cli",
                "generate",
                "--job",
                str(_job(tmp, tiny_kimi)),
                "--server",
                server.url,
                "--output",
                str(tmp / "out"),
                "--metrics-port",
                str(metrics_port),
                "--metrics-linger",
                "4",
                "--progress",
                "log",
                # what the operator renders (operator/render/generator.py)
                "--generationjob",
                JOB,
                "--namespace",
                NAMESPACE,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
            cwd=tmp,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        time.sleep(1)  # one more rule evaluation after the generator's final scrapes
        yield prom, start, time.time(), tmp


def test_prometheus_scraped_both_targets(live_run):
    prom, start, end, _ = live_run
    for job in ("draftgen-sglang", "draftgen-generator"):
        ups = prom.query_range(f'up{{job="{job}"}}', start, end)
        assert ups and any(v == "1" for _, v in ups[0]["values"]), f"{job} was never up"


def test_every_dashboard_query_returns_data(live_run):
    prom, start, end, _ = live_run
    empty = []
    for title, ref, expr in _panel_targets():
        result = prom.query_range(expr, start, end, step=1)
        if not any(series["values"] for series in result) and not any(
            metric in expr for metric in MAY_BE_EMPTY
        ):
            empty.append(f"{title} [{ref}]: {expr}")
    assert empty == []


def test_every_panel_shows_something(live_run):
    prom, start, end, _ = live_run
    by_panel: dict[str, bool] = {}
    for title, _, expr in _panel_targets():
        result = prom.query_range(expr, start, end, step=1)
        by_panel[title] = by_panel.get(title, False) or any(s["values"] for s in result)
    assert [t for t, shown in by_panel.items() if not shown] == []


def _written_tokens(tmp: Path) -> dict[str, int]:
    """Completion tokens per dataset in the records on disk."""
    written: dict[str, int] = {}
    for shard in (tmp / "out").glob("*/*.jsonl"):
        if shard.name.startswith("rejects"):
            continue
        for line in shard.read_text().splitlines():
            record = json.loads(line)
            written[record["dataset"]] = (
                written.get(record["dataset"], 0) + record["completion_tokens"]
            )
    return written


def test_dashboard_reads_the_tokens_the_generator_wrote(live_run):
    """The dashboard's per-dataset token counter agrees with the records on disk."""
    prom, start, end, tmp = live_run
    written = _written_tokens(tmp)
    result = prom.query_range(
        'sum by (dataset) (draftgen_completion_tokens_total{job="draftgen-generator"})',
        start,
        end,
        step=1,
    )
    seen = {s["metric"]["dataset"]: int(float(s["values"][-1][1])) for s in result}
    assert seen == written and all(v > 0 for v in written.values())


def test_alert_rules_evaluate_cleanly_on_real_series(live_run):
    prom, *_ = live_run
    groups = prom._get("rules")["groups"]
    rules = [r for g in groups for r in g["rules"]]
    assert len(rules) == sum(
        len(g["rules"]) for g in yaml.safe_load((FILES / "alerts.yaml").read_text())["groups"]
    )
    assert [(r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"] == []
    firing = [
        a["labels"]["alertname"] for a in prom._get("alerts")["alerts"] if a["state"] == "firing"
    ]
    assert firing == [], "a healthy short job set off alerts"


def test_every_generator_series_names_its_generationjob(live_run):
    """The generator's own labels arrive as set (the chart's honorLabels), never renamed
    exported_*, and the dashboard's GenerationJob selector lists the job."""
    prom, start, end, _ = live_run
    series = prom._get(
        "series",
        **{
            "match[]": '{job="draftgen-generator", __name__=~"draftgen_.*"}',
            "start": start,
            "end": end,
        },
    )
    assert {s["__name__"] for s in series} >= {
        m.name if m.type != "histogram" else m.name + "_count" for m in metrics.ALL
    }
    wrong = [s for s in series if s.get("generationjob") != JOB or s.get("namespace") != NAMESPACE]
    assert wrong == [] and not any(k.startswith("exported_") for s in series for k in s)
    values = prom._get(
        "label/generationjob/values",
        **{"match[]": 'draftgen_job_done{namespace=~".*"}', "start": start, "end": end},
    )
    assert values == [JOB]


def test_every_reject_reason_is_a_series_from_the_first_scrape(live_run):
    """No "No data" reject panel: every reason of the enum exists for each dataset, at 0 unless
    the run rejected rows for it (the chat dataset has a malformed and an empty row)."""
    prom, start, end, _ = live_run
    result = prom.query_range('draftgen_rejects_total{job="draftgen-generator"}', start, end)
    by_dataset: dict[str, set[str]] = {}
    for s in result:
        by_dataset.setdefault(s["metric"]["dataset"], set()).add(s["metric"]["reason"])
    assert by_dataset == {d: {r.value for r in metrics.RejectReason} for d in ("chat", "prompts")}
    final = {
        s["metric"]["reason"]: float(s["values"][-1][1])
        for s in result
        if s["metric"]["dataset"] == "chat"
    }
    assert final["malformed_json"] == 1 and final["empty_conversation"] == 1


def test_the_summary_row_reads_the_run(live_run):
    """Budget used ends at what the records on disk say; the rate and finish time are real
    numbers during the run; the saturation verdict is a 0/1 answer for the server."""
    prom, start, end, tmp = live_run
    by_title = {(t, ref): e for t, ref, e in _panel_targets()}

    def values(title: str) -> list[float]:
        result = prom.query_range(by_title[(title, "A")], start, end, step=1)
        return [float(v) for s in result for _, v in s["values"]]

    written = _written_tokens(tmp)  # each dataset counts up to its budget of 500
    expected = sum(min(n, 500) for n in written.values()) / (500 * len(written))
    used = values("Budget used (all datasets)")
    assert used[-1] == pytest.approx(expected) and min(used) < expected
    assert all(0 <= v <= 1 for v in used)
    assert max(values("Completion tokens/s")) > 0
    finish = values("Finish time")
    assert all(start * 1000 <= v <= (end + 3600) * 1000 for v in finish)
    assert set(values("Saturated")) <= {0.0, 1.0}
    assert all(0 <= v <= 1 for v in values("KV cache usage"))
