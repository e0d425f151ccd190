"""The view's figures from snapshots (pure: no terminal, no network)."""

from __future__ import annotations

from draftgen.contract.saturation import Verdict
from draftgen.top.model import Budget, DatasetReading, History, ServerReading, Snapshot, build_view


def _snap(at: float, completion: int, *, samples: int = 10, **kw) -> Snapshot:
    ds = DatasetReading(
        "code",
        samples=samples,
        prompt_tokens=4_000 * samples,
        completion_tokens=completion,
        truncated=2,
        rejects=3,
        budget=Budget(completion_tokens=100_000),
    )
    return Snapshot("test", at=at, datasets=(ds,), **kw)


def test_rate_eta_and_finish_time_from_two_readings():
    h = History()
    h.add(_snap(1000.0, 10_000))
    h.add(_snap(1010.0, 20_000))  # 1,000 tok/s
    view = build_view(h.items)
    row = view.datasets[0]
    assert row.rate == 1000.0
    assert row.eta_seconds == 80.0  # 80,000 tokens left at 1,000/s
    assert row.state == "running" and row.fraction == 0.2
    assert row.truncation == 0.2 and row.rejects == 3
    assert view.totals.finish_at == 1010.0 + 80.0
    assert not view.alarms


def test_one_reading_has_no_rate_and_says_unknown():
    view = build_view([_snap(1000.0, 10_000)])
    assert view.datasets[0].rate is None and view.datasets[0].eta_seconds is None
    assert view.totals.eta_seconds is None and view.totals.finish_at is None


def test_the_generators_own_throughput_and_eta_win_for_the_job():
    view = build_view([_snap(1000.0, 10_000, throughput=930.0, eta_seconds=3600.0)])
    assert view.totals.rate == 930.0 and view.totals.eta_seconds == 3600.0


def test_met_budget_is_done_with_overshoot_visible():
    view = build_view([_snap(1000.0, 103_000)])
    row = view.datasets[0]
    assert row.state == "done" and row.eta_seconds == 0.0
    assert row.completion_tokens == 103_000 and row.fraction == 1.0
    assert view.totals.done


def test_done_without_the_budget_met_is_rows_used_up():
    ds = DatasetReading("a", samples=3, completion_tokens=30, done=True, exhausted=True)
    assert build_view([Snapshot("t", datasets=(ds,))]).datasets[0].state == "no rows"


def test_zero_tokens_from_a_source_with_samples_is_a_loud_no_data():
    ds = DatasetReading("a", samples=7000, completion_tokens=0)
    alarms = build_view([Snapshot("old-records", datasets=(ds,))]).alarms
    assert len(alarms) == 1 and "NO DATA" in alarms[0] and "7,000 samples" in alarms[0]


def test_an_unreadable_source_and_an_empty_page_are_no_data():
    assert build_view([Snapshot("u", error="ConnectError")]).alarms == (
        "NO DATA from u: ConnectError",
    )
    assert "names no dataset" in build_view([Snapshot("u")]).alarms[0]


def test_server_without_gauges_is_no_data():
    snap = _snap(1.0, 10, servers=(ServerReading("s0"), ServerReading("s1", error="refused")))
    alarms = build_view([snap]).alarms
    assert any("s0" in a and "token_usage" in a for a in alarms)
    assert any("s1" in a and "refused" in a for a in alarms)


def _load(at: float, usage: float, queue: float) -> Snapshot:
    return _snap(at, 10, servers=(ServerReading("s0", usage, 40, queue),))


def test_saturated_needs_usage_high_and_a_growing_queue():
    h = History()
    for i, q in enumerate([5, 8, 12]):
        h.add(_load(1000.0 + 10 * i, 0.96, q))
    assert build_view(h.items).servers[0].verdict is Verdict.SATURATED


def test_full_but_keeping_up_is_not_saturated():
    h = History()
    for i, q in enumerate([3, 3, 3]):  # the generator's short queue, steady
        h.add(_load(1000.0 + 10 * i, 0.96, q))
    assert build_view(h.items).servers[0].verdict is Verdict.FULL


def test_low_usage_with_a_queue_is_ok_and_no_readings_unknown():
    h = History()
    for i, q in enumerate([1, 5, 9]):
        h.add(_load(1000.0 + 10 * i, 0.5, q))
    assert build_view(h.items).servers[0].verdict is Verdict.OK
    snap = _snap(1.0, 10, servers=(ServerReading("s0", error="x"),))
    assert build_view([snap]).servers[0].verdict is Verdict.UNKNOWN


def test_history_keeps_only_recent_snapshots():
    h = History(keep_seconds=60)
    for t in (0.0, 30.0, 100.0):
        h.add(_snap(t, 1))
    assert [s.at for s in h.items] == [100.0]


def test_each_data_parallel_rank_is_judged_on_its_own():
    """A server with two ranks (a KV pool and a queue each): rank 0 full with a growing queue,
    rank 1 idle. Read as one server (the largest of each gauge) it would be the same verdict by
    luck; the other case, usage high on rank 0 and the queue on rank 1, would be called
    saturated. Per rank: rank 0 SATURATED, rank 1 ok, and the split case nowhere saturated."""
    from draftgen.top.readings import parse_server_ranks

    def page(usage: tuple[float, float], queue: tuple[float, float]) -> str:
        lines = ["# TYPE sglang:token_usage gauge", "# TYPE sglang:num_queue_reqs gauge"]
        for rank in (0, 1):
            lines.append(f'sglang:token_usage{{dp_rank="{rank}",tp_rank="0"}} {usage[rank]}')
            lines.append(f'sglang:num_queue_reqs{{dp_rank="{rank}",tp_rank="0"}} {queue[rank]}')
        return "\n".join(lines) + "\n"

    one_full, split = History(), History()
    for i, q in enumerate([5, 8, 12]):
        at = 1000.0 + 10 * i
        one_full.add(
            _snap(at, 10, servers=tuple(parse_server_ranks(page((0.97, 0.05), (q, 0)), "s0")))
        )
        split.add(_snap(at, 10, servers=tuple(parse_server_ranks(page((0.97, 0.4), (0, q)), "s0"))))
    rows = build_view(one_full.items).servers
    assert [(r.name, r.verdict) for r in rows] == [
        ("s0 rank 0", Verdict.SATURATED),
        ("s0 rank 1", Verdict.OK),
    ]
    assert Verdict.SATURATED not in [r.verdict for r in build_view(split.items).servers]
