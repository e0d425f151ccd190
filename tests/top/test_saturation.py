"""The chart's saturation alert and `draftgen top` judge by the same numbers
(draftgen/contract/saturation.py)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from draftgen.contract import saturation
from draftgen.contract.saturation import LoadPoint, Verdict, verdict

ALERTS = Path(__file__).resolve().parents[2] / "charts" / "draftgen" / "files" / "alerts.yaml"


def _expr() -> str:
    rules = [r for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]]
    return next(r["expr"] for r in rules if r["alert"] == "DraftgenKVCacheSaturated")


def _minutes(seconds: int) -> str:
    return f"{seconds // 60}m"


def test_the_alert_uses_the_shared_threshold_and_windows():
    expr = " ".join(_expr().split())
    usage = re.search(
        rf"avg_over_time\({re.escape(saturation.TOKEN_USAGE)}\{{[^}}]*\}}\[(\w+)\]\)\)\s*>\s*([\d.]+)",
        expr,
    )
    assert usage, expr
    assert usage.group(1) == _minutes(saturation.USAGE_WINDOW_SECONDS)
    assert float(usage.group(2)) == saturation.KV_USAGE_HIGH
    queue = re.escape(saturation.QUEUE)
    window = _minutes(saturation.QUEUE_WINDOW_SECONDS)
    assert re.search(rf"min_over_time\({queue}\{{[^}}]*\}}\[{window}\]\)\)\s*>\s*0", expr), expr
    assert re.search(rf"deriv\({queue}\{{[^}}]*\}}\[{window}\]\)\)\s*>\s*0", expr), expr


def test_verdict_follows_the_rule():
    grow = [LoadPoint(60.0 * i, 0.95, 2 + i) for i in range(5)]
    assert verdict(grow) is Verdict.SATURATED
    # usage exactly at the threshold is not above it
    assert verdict([LoadPoint(p.at, saturation.KV_USAGE_HIGH, p.queue) for p in grow]) is Verdict.OK
    # a queue that drained once inside the window: not saturated
    drained = [*grow[:-1], LoadPoint(240.0, 0.95, 0)]
    assert verdict(drained) is Verdict.FULL
    # readings older than the windows do not count
    old = [LoadPoint(0.0, 0.2, 0), *[LoadPoint(1000.0 + i, 0.95, 1 + i) for i in range(3)]]
    assert verdict(old) is Verdict.SATURATED
    assert verdict([]) is Verdict.UNKNOWN
