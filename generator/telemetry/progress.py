"""Progress for people: a live table per dataset on a terminal (tokens against budget, tokens/s,
ETA); otherwise, every interval, one log record (a Kubernetes pod's log): a readable multi-line
block (`--log-format text`) or one JSON object a line (`--log-format json`, what the operator sets,
so log stacks parse it). The block and the object are built from the same `summary()`."""

from __future__ import annotations

import datetime
import logging
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from draftgen.contract.generator_cli import LOG_FORMATS
from draftgen.generator.telemetry.logs import PROGRESS_FIELD

# `name as name`: re-exported for callers that still import them from here (generator/cli.py and
# pretokenize.py the JSON log's, generator/run.py the rate model's); new callers import them from
# logs.py and rate.py.
from draftgen.generator.telemetry.logs import json_logging as json_logging
from draftgen.generator.telemetry.logs import worker_logging as worker_logging
from draftgen.generator.telemetry.rate import RateMeter
from draftgen.generator.telemetry.rate import eta_seconds as eta_seconds
from draftgen.output.figures import budget_text, state_text
from draftgen.output.ledger import Ledger
from draftgen.redact import redact_url
from draftgen.timefmt import format_duration

if TYPE_CHECKING:
    from rich.live import Live

log = logging.getLogger("draftgen.generate")


def _fmt_eta(seconds: float | None) -> str:
    return format_duration(seconds) or "?"


def _budget_text(ledger: Ledger) -> str:
    return (
        budget_text(ledger.budget, ledger.figures())
        or f"{ledger.completion_tokens:,} tok (no budget)"
    )


def _state(ledger: Ledger) -> str:
    return state_text(ledger.limit_met(), ledger.closed, ledger.exhausted, "running")


@dataclass(frozen=True)
class ServerFigures:
    """One server as progress reports it: its live gauges as last read (None: not read)."""

    url: str
    in_flight: int
    token_usage: float | None = None
    running: float | None = None
    queued: float | None = None
    dp_rank: int | None = None
    """The data-parallel rank whose pool these are (None: the server has one pool)."""


def server_figures(pools: Sequence[Any]) -> list[ServerFigures]:
    """generator/sglang/fleet.py's pools → figures (`server.client.url`, `rank`, `in_flight`,
    `load`): one per server, or per data-parallel rank of a server that runs several."""
    out = []
    for p in pools:
        load = p.load
        out.append(
            ServerFigures(
                p.server.client.url,
                p.in_flight,
                load.token_usage if load else None,
                load.num_running_reqs if load else None,
                load.num_queue_reqs if load else None,
                p.rank,
            )
        )
    return out


def _round(x: float | None, digits: int = 1) -> float | None:
    return None if x is None else round(x, digits)


def _utc(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="seconds")


class Progress:
    """Shows progress every `interval` seconds; `live` picks the terminal display, `log_format`
    the shape of the log record otherwise; `servers` gives the servers' live load."""

    def __init__(
        self,
        ledgers: Sequence[Ledger],
        *,
        live: bool | None = None,
        interval: float | None = None,
        log_format: str = "text",
        servers: Callable[[], Sequence[ServerFigures]] | None = None,
    ) -> None:
        if log_format not in LOG_FORMATS:
            raise ValueError(f"log format {log_format!r}: not one of {LOG_FORMATS}")
        self.ledgers = ledgers
        self.live = sys.stderr.isatty() if live is None else live
        self.interval = interval if interval is not None else (0.5 if self.live else 10.0)
        self.log_format = log_format
        self._servers = servers if servers is not None else (lambda: [])
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
            ds_eta = ledger.figures().eta(ds_rate)
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
        summary = self.summary(rate, eta, in_flight)
        if self.log_format == "json":
            log.info("progress", extra={PROGRESS_FIELD: summary})
        else:
            log.info("%s", text_block(summary))

    def summary(self, rate: float, eta: float | None, in_flight: int) -> dict[str, Any]:
        """Progress as plain data: the JSON log object and the text block's figures."""
        now = time.time()
        datasets = []
        for ledger in self.ledgers:
            ds_rate = self._rates[ledger.dataset].rate()
            frac = ledger.fraction_done()
            ds_eta = ledger.figures().eta(ds_rate)
            datasets.append(
                {
                    "dataset": ledger.dataset,
                    "state": _state(ledger),
                    "done": ledger.done,
                    "samples": ledger.samples,
                    "prompt_tokens": ledger.prompt_tokens,
                    "completion_tokens": ledger.completion_tokens,
                    "budget": ledger.budget.model_dump(by_alias=True, exclude_none=True),
                    "percent_of_budget": None if frac is None else round(100 * frac, 2),
                    "tokens_per_second": round(ds_rate, 1),
                    "eta_seconds": _round(ds_eta),
                    "truncation_rate": round(ledger.truncation_rate, 4),
                    "rejects": sum(ledger.rejects.values()),
                    "rejects_by_reason": dict(sorted(ledger.rejects.items())),
                }
            )
        servers = [
            {
                "server": redact_url(s.url),
                **({} if s.dp_rank is None else {"dp_rank": s.dp_rank}),
                "token_usage": _round(s.token_usage, 3),
                "running": s.running,
                "queued": s.queued,
                "in_flight": s.in_flight,
            }
            for s in self._servers()
        ]
        return {
            "tokens_per_second": round(rate, 1),
            "in_flight": in_flight,
            "eta_seconds": _round(eta),
            "finish_at": None if eta is None else _utc(now + eta),
            "samples": sum(ledger.samples for ledger in self.ledgers),
            "completion_tokens": sum(ledger.completion_tokens for ledger in self.ledgers),
            "datasets": datasets,
            "servers": servers,
        }


def _cell(value: float | None, fmt: str, unknown: str = "?") -> str:
    return unknown if value is None else format(value, fmt)


def text_block(summary: dict[str, Any]) -> str:
    """The `--log-format text` record: a header line, one line per dataset, one per server."""
    eta = summary["eta_seconds"]
    finish = f" (finish {summary['finish_at']})" if summary["finish_at"] and eta else ""
    lines = [
        f"progress: {summary['tokens_per_second']:,.0f} tok/s, {summary['in_flight']} in flight, "
        f"{summary['samples']:,} samples, {summary['completion_tokens']:,} completion tokens, "
        f"ETA {_fmt_eta(eta)}{finish}"
    ]
    width = max((len(d["dataset"]) for d in summary["datasets"]), default=0)
    for d in summary["datasets"]:
        budget = d["budget"]
        limit = budget.get("completionTokens")
        tokens = f"{d['completion_tokens']:,}" + (f"/{limit:,}" if limit is not None else "")
        samples = f"{d['samples']:,}" + (
            f"/{budget['maxSamples']:,}" if budget.get("maxSamples") is not None else ""
        )
        total = ""
        if budget.get("totalTokens") is not None:
            whole = d["prompt_tokens"] + d["completion_tokens"]
            total = f"total {whole:,}/{budget['totalTokens']:,}  "
        reasons = ", ".join(f"{k} {v:,}" for k, v in d["rejects_by_reason"].items())
        share = d["percent_of_budget"]
        pct = "-" if share is None else f"{math.floor(share + 1e-9)}%"  # 99.6 is not 100
        lines.append(
            f"  {d['dataset']:<{width}}  {d['state']:<19} "
            f"{pct:>4}  completion {tokens}  "
            f"prompt {d['prompt_tokens']:,}  {total}samples {samples}  "
            f"{d['tokens_per_second']:,.0f} tok/s  ETA {_fmt_eta(d['eta_seconds'])}  "
            f"truncated {100 * d['truncation_rate']:.1f}%  rejects {d['rejects']:,}"
            + (f" ({reasons})" if reasons else "")
        )
    for srv in summary["servers"]:
        usage = srv["token_usage"]
        rank = f" rank {srv['dp_rank']}" if "dp_rank" in srv else ""
        lines.append(
            f"  server {srv['server']}{rank}: KV {_cell(None if usage is None else 100 * usage, '.0f')}% "
            f"used, {_cell(srv['running'], '.0f')} running, {_cell(srv['queued'], '.0f')} queued, "
            f"{srv['in_flight']} in flight from here"
        )
    return "\n".join(lines)
