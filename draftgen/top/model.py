"""What `draftgen top` shows, as plain data. A source reads a `Snapshot` (what it saw, at one
moment); `build_view()` turns the snapshots seen so far into the rows the screen draws. No I/O and
no rendering here, so the figures are tested without a terminal or a network."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from draftgen.contract.saturation import LoadPoint, Verdict, verdict
from draftgen.output.counts import DatasetCounts
from draftgen.output.figures import DatasetFigures, job_eta

RATE_WINDOW_SECONDS = 60.0
"""Tokens/s are measured over the last minute of snapshots (as the generator's own gauge)."""


@dataclass(frozen=True)
class Budget:
    completion_tokens: int | None = None
    total_tokens: int | None = None
    max_samples: int | None = None

    @property
    def any(self) -> bool:
        return any(
            v is not None for v in (self.completion_tokens, self.total_tokens, self.max_samples)
        )


@dataclass
class DatasetReading(DatasetCounts):
    """One dataset's counts as a source read them."""

    name: str
    truncated: int | None = 0
    """Samples that ended at maxNewTokens (None: the source does not say)."""
    rejects: int = 0
    budget: Budget = Budget()
    done: bool = False
    exhausted: bool | None = None
    """Every input row used (None: the source does not say)."""

    def figures(self) -> DatasetFigures:
        """The figures the generator's progress and `draftgen stats` show, figured alike."""
        return DatasetFigures(
            budget=self.budget,
            samples=self.samples,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            done=self.done,
        )

    def limit_met(self) -> bool:
        return self.figures().limit_met() is not None

    def fraction(self) -> float | None:
        """Progress towards the nearest limit, 0–1 (None without a budget)."""
        return self.figures().fraction_done()


@dataclass(frozen=True)
class ServerReading:
    """One SGLang replica's live gauges (None: not read)."""

    name: str
    token_usage: float | None = None
    running: float | None = None
    queued: float | None = None
    error: str | None = None
    """Why the gauges could not be read."""


@dataclass(frozen=True)
class Snapshot:
    """Everything one source read at one moment."""

    source: str
    """What was read, for the title (a URL, a directory, gj/NAME)."""
    at: float = field(default_factory=time.time)
    """Wall-clock seconds of the reading."""
    datasets: tuple[DatasetReading, ...] = ()
    """In spec order."""
    servers: tuple[ServerReading, ...] = ()
    throughput: float | None = None
    """The generator's own completion tokens/s, when it reports one."""
    eta_seconds: float | None = None
    """The generator's own ETA, when it reports one."""
    job_done: bool | None = None
    phase: str | None = None
    """The GenerationJob's phase (cluster source only)."""
    error: str | None = None
    """The source could not be read at all (nothing below is real)."""
    notes: tuple[str, ...] = ()
    """Things a person should know about the figures (a fallback taken, a stale file)."""
    stopped: str | None = None
    """Why nothing works on the job although it is not done (a generator killed): the figures
    are its last, and the job is not running."""


class History:
    """The snapshots of the last few minutes: rates and the saturation verdict need more than
    one reading."""

    def __init__(self, keep_seconds: float = 11 * 60) -> None:
        self.keep = keep_seconds
        self._items: deque[Snapshot] = deque()

    def add(self, snap: Snapshot) -> None:
        if self._items and snap.at < self._items[-1].at:
            self._items.clear()  # a clock that went back (another source, a new run): start over
        self._items.append(snap)
        while self._items and self._items[0].at < snap.at - self.keep:
            self._items.popleft()

    @property
    def items(self) -> Sequence[Snapshot]:
        return tuple(self._items)


# ---- the view ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetRow:
    name: str
    state: str
    fraction: float | None
    completion_tokens: int
    completion_budget: int | None
    prompt_tokens: int
    total_budget: int | None
    samples: int
    max_samples: int | None
    rate: float | None
    eta_seconds: float | None
    truncation: float | None
    rejects: int


@dataclass(frozen=True)
class ServerRow:
    name: str
    token_usage: float | None
    running: float | None
    queued: float | None
    verdict: Verdict
    error: str | None


@dataclass(frozen=True)
class Totals:
    samples: int
    prompt_tokens: int
    completion_tokens: int
    completion_budget: int | None
    fraction: float | None
    rate: float | None
    eta_seconds: float | None
    finish_at: float | None
    """Wall-clock seconds the job should finish at (None: unknown)."""
    rejects: int
    done: bool
    state: str = "running"
    """`done`, `running`, `stopped` (not done, nothing writes it) or `no data` (the source read
    nothing): never `running` beside data that is absent or stale."""


@dataclass(frozen=True)
class View:
    source: str
    at: float
    phase: str | None
    datasets: tuple[DatasetRow, ...]
    servers: tuple[ServerRow, ...]
    totals: Totals
    alarms: tuple[str, ...]
    """Loud problems: no data, a source that reads zero (field facts, lesson 8)."""
    notes: tuple[str, ...]


def state_of(d: DatasetReading) -> str:
    if d.done or d.limit_met():
        if d.limit_met():
            return "done"
        return "no rows" if d.exhausted else "done"
    return "running" if d.samples else "waiting"


def _rate_of(history: Sequence[Snapshot], name: str | None) -> float | None:
    """Completion tokens/s of one dataset (None: every dataset) over the last minute."""
    if len(history) < 2:
        return None
    last = history[-1]
    first = next(
        (s for s in history if s.at >= last.at - RATE_WINDOW_SECONDS and s.error is None), None
    )
    if first is None or first is last or last.at <= first.at:
        return None

    def tokens(s: Snapshot) -> int | None:
        found = [d.completion_tokens for d in s.datasets if name is None or d.name == name]
        return sum(found) if found else None

    a, b = tokens(first), tokens(last)
    if a is None or b is None:
        return None
    return max(0.0, (b - a) / (last.at - first.at))


def _verdict(history: Sequence[Snapshot], server: str) -> Verdict:
    points = []
    for s in history:
        for r in s.servers:
            if r.name == server and r.token_usage is not None and r.queued is not None:
                points.append(LoadPoint(s.at, r.token_usage, r.queued))
    return verdict(points)


def _alarms(snap: Snapshot) -> list[str]:
    if snap.error is not None:
        return [f"NO DATA from {snap.source}: {snap.error}"]
    out = []
    if not snap.datasets:
        out.append(f"NO DATA: {snap.source} names no dataset")
    samples = sum(d.samples for d in snap.datasets)
    tokens = sum(d.completion_tokens for d in snap.datasets)
    if samples and not tokens:
        out.append(
            f"NO DATA: {samples:,} samples but 0 completion tokens from {snap.source}: "
            "the counts are NOT real (a renamed metric or an old record format?)"
        )
    for r in snap.servers:
        if r.error is not None:
            out.append(f"NO DATA from server {r.name}: {r.error}")
        elif r.token_usage is None:
            out.append(f"NO DATA from server {r.name}: no {'sglang:token_usage'} on its page")
    return out


def build_view(history: Sequence[Snapshot]) -> View:
    """The rows for the latest snapshot, with rates and verdicts from the ones before it."""
    if not history:
        raise ValueError("build_view needs at least one snapshot")
    snap = history[-1]
    rows = []
    for d in snap.datasets:
        rate = _rate_of(history, d.name)
        figures = d.figures()
        finished = figures.finished
        eta = figures.eta(rate)
        rows.append(
            DatasetRow(
                name=d.name,
                state=state_of(d),
                fraction=1.0 if finished and d.fraction() is None else d.fraction(),
                completion_tokens=d.completion_tokens,
                completion_budget=d.budget.completion_tokens,
                prompt_tokens=d.prompt_tokens,
                total_budget=d.budget.total_tokens,
                samples=d.samples,
                max_samples=d.budget.max_samples,
                rate=None if finished and not rate else rate,
                eta_seconds=eta,
                truncation=(
                    None if d.truncated is None else (d.truncated / d.samples if d.samples else 0.0)
                ),
                rejects=d.rejects,
            )
        )
    servers = tuple(
        ServerRow(r.name, r.token_usage, r.running, r.queued, _verdict(history, r.name), r.error)
        for r in snap.servers
    )
    rate = snap.throughput if snap.throughput is not None else _rate_of(history, None)
    done = bool(snap.job_done) or (
        bool(snap.datasets) and all(r.state != "running" and r.state != "waiting" for r in rows)
    )
    state = (
        "done" if done else "no data" if snap.error is not None else "stopped" if snap.stopped
        else "running"
    )  # fmt: skip
    eta = _job_eta(snap, rate, done) if state in ("done", "running") else None
    budgets = [d.budget.completion_tokens for d in snap.datasets]
    completion_budget = sum(b for b in budgets if b) if budgets and all(budgets) else None
    fraction = None
    if completion_budget:
        fraction = (
            sum(min(d.completion_tokens, d.budget.completion_tokens or 0) for d in snap.datasets)
            / completion_budget
        )
    totals = Totals(
        samples=sum(d.samples for d in snap.datasets),
        prompt_tokens=sum(d.prompt_tokens for d in snap.datasets),
        completion_tokens=sum(d.completion_tokens for d in snap.datasets),
        completion_budget=completion_budget,
        fraction=1.0 if done and fraction is None and snap.datasets else fraction,
        rate=rate,
        eta_seconds=eta,
        finish_at=None if eta is None else snap.at + eta,
        rejects=sum(d.rejects for d in snap.datasets),
        done=done,
        state=state,
    )
    return View(
        source=snap.source,
        at=snap.at,
        phase=snap.phase,
        datasets=tuple(rows),
        servers=servers,
        totals=totals,
        alarms=tuple(_alarms(snap)),
        notes=snap.notes + ((snap.stopped,) if snap.stopped else ()),
    )


def _job_eta(snap: Snapshot, rate: float | None, done: bool) -> float | None:
    if done:
        return 0.0
    if snap.eta_seconds:  # the generator's gauge reads 0 until it knows a rate
        return snap.eta_seconds
    return job_eta((d.figures() for d in snap.datasets), rate)
