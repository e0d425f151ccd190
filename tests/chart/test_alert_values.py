"""Alert thresholds, `for` durations, severities and runbook links are chart values (issue 30,
item 12): with the defaults the PrometheusRule is files/alerts.yaml verbatim (the file promtool
tests), and each value changes exactly its alert, into rules promtool still accepts."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from .rendering import CHART, one, render

ALERTS = yaml.safe_load((CHART / "files" / "alerts.yaml").read_text())
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
PROMTOOL = shutil.which("promtool")


def _rules(values: dict) -> dict[str, dict]:
    docs = render({"monitoring": {"prometheusRule": {"enabled": True, **values}}})
    groups = one(docs, "PrometheusRule")["spec"]["groups"]
    return {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}


def test_the_defaults_render_the_rules_file_verbatim():
    docs = render({"monitoring": {"prometheusRule": {"enabled": True}}})
    assert one(docs, "PrometheusRule")["spec"]["groups"] == ALERTS["groups"]


def test_every_alert_in_values_exists_and_its_defaults_are_the_files():
    file_rules = {r["alert"]: r for g in ALERTS["groups"] for r in g["rules"] if "alert" in r}
    for name, settings in VALUES["monitoring"]["prometheusRule"]["alerts"].items():
        assert name in file_rules, name
        if "for" in settings:
            assert settings["for"] == file_rules[name]["for"], name
        assert settings["severity"] == file_rules[name]["labels"]["severity"], name


def test_values_change_for_severity_threshold_and_runbook():
    rules = _rules(
        {
            "runbookBaseURL": "https://wiki.example.com/draftgen/alerts",
            "alerts": {
                "DraftgenJobStuckQueued": {"for": "3d", "severity": "info"},
                "DraftgenKVCacheSaturated": {"threshold": 0.97},
                "DraftgenServerRestarting": {"threshold": 5},
            },
        }
    )
    file_rules = {r["alert"]: r for g in ALERTS["groups"] for r in g["rules"] if "alert" in r}
    queued = rules["DraftgenJobStuckQueued"]
    assert (queued["for"], queued["labels"]["severity"]) == ("3d", "info")
    assert "> 0.97" in rules["DraftgenKVCacheSaturated"]["expr"]
    assert "> 0.9\n" not in rules["DraftgenKVCacheSaturated"]["expr"]
    assert ">= 5" in rules["DraftgenServerRestarting"]["expr"]
    for name, rule in rules.items():
        assert rule["annotations"]["runbook_url"] == (
            f"https://wiki.example.com/draftgen/alerts#{name.lower()}"
        )
        if name not in (
            "DraftgenJobStuckQueued",
            "DraftgenKVCacheSaturated",
            "DraftgenServerRestarting",
        ):
            assert rule["expr"] == file_rules[name]["expr"], name


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian's prometheus)")
def test_promtool_accepts_the_rules_rendered_with_other_values(tmp_path):
    rules = _rules(
        {
            "alerts": {
                "DraftgenJobFailed": {"for": "30m"},
                "DraftgenKVCacheSaturated": {"threshold": 0.95, "for": "1h"},
                "DraftgenServerRestarting": {"threshold": 3},
            }
        }
    )
    path = tmp_path / "rules.yaml"
    path.write_text(
        yaml.safe_dump({"groups": [{"name": "rendered", "rules": list(rules.values())}]})
    )
    result = subprocess.run(
        [PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
