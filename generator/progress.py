"""Progress for people: a live table per dataset on a terminal (tokens against budget, tokens/s,
ETA), plain periodic log lines otherwise (a Kubernetes pod's log)."""

from __future__ import annotations

import logging
import sys
import time
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from draftgen.plan.eta import format_duration, remaining_completion_tokens

from .budget import Ledger

if TYPE_CHECKING:
    from rich.live import Live

log = logging.getLogger("draftgen.generate")


class RateMeter:
    """Tokens per second over a sliding window."""

    def __init__(self, window: float = 60.0) -> None:
        self.window = window
        self._events: deque[tuple[float, int]] = deque()
        self._start = time.monotonic()

    def add(self, tokens: int, now: float | None = None) -> None:
        self._events.append((time.monotonic() if now is None else now, tokens))

    def rate(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        while self._events and self._events[0][0] < now - self.window:
            self._events.popleft()
        span = min(self.window, now - self._start)
        if span <= 0.5:
            return 0.0
        return sum(n for _, n in self._events) / span


def remaining_tokens(ledger: Ledger) -> float | None:
    """Completion tokens still to generate before the dataset's nearest limit (None: unknown),
    by the planner's rule (draftgen/plan/eta.py) at the lengths measured so far."""
    if ledger.done:
        return 0.0
    b = ledger.budget
    n = ledger.samples
    return remaining_completion_tokens(
        b.completion_tokens,
        b.total_tokens,
        b.max_samples,
        ledger.prompt_tokens / n if n else None,
        ledger.completion_tokens / n if n else None,
        ledger.completion_tokens,
    )


def eta_seconds(ledgers: Sequence[Ledger], rate: float) -> float | None:
    """Seconds until every budget is met at `rate` tokens/s (None when unknown)."""
    if rate <= 0:
        return None
    total = 0.0
    for ledger in ledgers:
        left = remaining_tokens(ledger)
        if left is None:
            return None
        total += left
    return total / rate


def _fmt_eta(seconds: float | None) -> str:
    return format_duration(seconds) or "?"


def _budget_text(ledger: Ledger) -> str:
    b = ledger.budget
    parts = []
    if b.completion_tokens is not None:
        parts.append(f"{ledger.completion_tokens:,}/{b.completion_tokens:,} tok")
    if b.total_tokens is not None:
        parts.append(f"{ledger.total_tokens:,}/{b.total_tokens:,} total")
    if b.max_samples is not None:
        parts.append(f"{ledger.samples:,}/{b.max_samples:,} samples")
    return ", ".join(parts) or f"{ledger.completion_tokens:,} tok (no budget)"


def _state(ledger: Ledger) -> str:
    if ledger.budget_met:
        return f"done ({ledger.limit_met()})"
    if ledger.closed:
        return "done (budget full)"
    if ledger.exhausted:
        return "done (rows used up)"
    return "running"


class Progress:
    """Shows progress every `interval` seconds; `live` picks the terminal display."""

    def __init__(
        self, ledgers: Sequence[Ledger], *, live: bool | None = None, interval: float | None = None
    ) -> None:
        self.ledgers = ledgers
        self.live = sys.stderr.isatty() if live is None else live
        self.interval = interval if interval is not None else (0.5 if self.live else 10.0)
        self._last = 0.0
        self._display: Live | None = None
        self._rates: dict[str, RateMeter] = {ledger.dataset: RateMeter() for ledger in ledgers}

    def add_tokens(self, dataset: str, tokens: int) -> None:
        self._rates[dataset].add(tokens)

    def __enter__(self) -> Progress:
        if self.live:
            from rich.console import Console
            from rich.live import Live

            display = Live(
                self._table(0.0, None, 0),
                console=Console(stderr=True),
                refresh_per_second=4,
                transient=False,
            )
            display.__enter__()
            self._display = display
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._display is not None:
            self._display.__exit__(*exc)
            self._display = None

    def _table(self, rate: float, eta: float | None, in_flight: int):
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        table = Table(
            title=f"draftgen  {rate:,.0f} tok/s  {in_flight} in flight  ETA {_fmt_eta(eta)}",
            expand=False,
        )
        for col in (
            "dataset",
            "progress",
            "",
            "tokens / budget",
            "tok/s",
            "ETA",
            "samples",
            "trunc",
            "rejects",
            "state",
        ):
            table.add_column(
                col,
                justify="left" if col in ("dataset", "tokens / budget", "state") else "right",
                no_wrap=True,
            )
        for ledger in self.ledgers:
            frac = ledger.fraction_done()
            ds_rate = self._rates[ledger.dataset].rate()
            left = remaining_tokens(ledger)
            ds_eta = (
                0.0
                if ledger.done
                else (left / ds_rate if left is not None and ds_rate > 0 else None)
            )
            table.add_row(
                ledger.dataset,
                ProgressBar(total=1.0, completed=1.0 if ledger.done else (frac or 0.0), width=20),
                "-" if frac is None else f"{100 * frac:.0f}%",
                _budget_text(ledger),
                f"{ds_rate:,.0f}",
                _fmt_eta(ds_eta),
                f"{ledger.samples:,}",
                f"{100 * ledger.truncation_rate:.1f}%",
                f"{sum(ledger.rejects.values())}",
                _state(ledger),
            )
        return table

    def update(self, rate: float, eta: float | None, in_flight: int, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        if self._display is not None:
            self._display.update(self._table(rate, eta, in_flight))
            return
        parts = [
            f"{ledger.dataset}: {_budget_text(ledger)} {_state(ledger)}" for ledger in self.ledgers
        ]
        log.info(
            "%.0f tok/s, %d in flight, ETA %s | %s",
            rate,
            in_flight,
            _fmt_eta(eta),
            " | ".join(parts),
        )
