"""A `View` → rich renderables. Fits 120 columns with ten datasets: names are abbreviated (in the
middle, with `~`), numbers never are (large counts are written as `12.34M`, exact below a
million); an unknown figure is `-`."""

from __future__ import annotations

import datetime
import math

from rich import box
from rich.console import Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from draftgen.contract.saturation import KV_USAGE_HIGH, Verdict
from draftgen.timefmt import format_duration

from .model import DatasetRow, ServerRow, View

NAME_WIDTH = 16
BAR_WIDTH = 10


def count(n: int | float | None) -> str:
    """`4321` → `4,321`; `12_345_678` → `12.35M`; None → `-`."""
    if n is None:
        return "-"
    n = int(n)
    if abs(n) < 1_000_000:
        return f"{n:,}"
    if abs(n) < 1_000_000_000:
        return f"{n / 1e6:.2f}M"
    return f"{n / 1e9:.2f}G"


def of(n: int, limit: int | None) -> str:
    return count(n) if limit is None else f"{count(n)}/{count(limit)}"


def percent(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def share(x: float | None) -> str:
    """A share of a budget, rounded down: 99.6% is `99%`, never a `100%` that is not met."""
    return "-" if x is None else f"{math.floor(100 * x + 1e-9)}%"


def duration(seconds: float | None) -> str:
    return format_duration(seconds) or "-"


def rate(r: float | None) -> str:
    return "-" if r is None else f"{r:,.0f}"


def clock(at: float | None, now: float) -> str:
    """A finish time in UTC; the day too when it is not today."""
    if at is None:
        return "-"
    when = datetime.datetime.fromtimestamp(at, datetime.UTC)
    today = datetime.datetime.fromtimestamp(now, datetime.UTC).date()
    return when.strftime("%H:%M UTC" if when.date() == today else "%a %d %b %H:%M UTC")


def abbreviate(names: list[str], width: int = NAME_WIDTH) -> list[str]:
    """Names cut in the middle to `width` (`glaive-fu~ling-v2`), kept distinct."""
    out: list[str] = []
    for name in names:
        short = name
        if len(name) > width:
            head = (width - 1) // 2
            short = f"{name[:head]}~{name[-(width - 1 - head) :]}"
        n = 2
        base = short
        while short in out:
            suffix = f"#{n}"
            short = base[: width - len(suffix)] + suffix
            n += 1
        out.append(short)
    return out


JOB_STATE = {
    "done": ("DONE", "bold green"),
    "running": ("running", "bold cyan"),
    "stopped": ("STOPPED", "bold white on red"),  # not done and nothing writes it: a kill
    "no data": ("state unknown", "bold white on red"),  # beside NO DATA: never "running"
}
STATE_STYLE = {"running": "cyan", "done": "green", "no rows": "yellow", "waiting": "dim"}
VERDICT_STYLE = {
    Verdict.SATURATED: "bold white on red",
    Verdict.FULL: "yellow",
    Verdict.OK: "green",
    Verdict.UNKNOWN: "dim",
}


NARROW = 110
"""Below this many columns the dataset table leaves out the bar and the prompt column and cuts
names shorter, so every figure that says when and how well (ETA, trunc, rejects) still shows."""


def _datasets(rows: tuple[DatasetRow, ...], narrow: bool = False) -> Table:
    table = Table(
        box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=narrow, expand=False
    )
    cells = [
        [
            share(row.fraction),
            of(row.completion_tokens, row.completion_budget),
            of(row.prompt_tokens + row.completion_tokens, row.total_budget)
            if row.total_budget is not None
            else count(row.prompt_tokens),
            of(row.samples, row.max_samples),
            rate(row.rate),
            duration(row.eta_seconds),
            percent(row.truncation, 1),
            count(row.rejects),
        ]
        for row in rows
    ]
    headers: tuple[str, ...] = (
        "%",
        "completion",
        "prompt",
        "samples",
        "tok/s",
        "ETA",
        "trunc",
        "rejects",
    )
    if narrow:  # no prompt column; samples without their limit (the % says how far)
        headers = headers[:2] + headers[3:]
        cells = [c[:2] + [count(r.samples)] + c[4:] for c, r in zip(cells, rows)]
    table.add_column("dataset", no_wrap=True, overflow="crop")
    table.add_column("state", no_wrap=True, min_width=7)
    if not narrow:
        table.add_column("progress", no_wrap=True, width=BAR_WIDTH)
    for i, header in enumerate(headers):
        # A number column is never narrower than its widest number: rich shrinks only names.
        widest = max([len(header), *(len(c[i]) for c in cells)])
        table.add_column(header, justify="right", no_wrap=True, min_width=widest)
    names = abbreviate([r.name for r in rows], 9 if narrow else NAME_WIDTH)
    for row, name, figures in zip(rows, names, cells):
        bar = (
            []
            if narrow
            else [ProgressBar(total=1.0, completed=row.fraction or 0.0, width=BAR_WIDTH)]
        )
        table.add_row(
            name,
            Text(row.state, style=STATE_STYLE.get(row.state, "")),
            *bar,
            *figures[:-1],
            Text(figures[-1], style="yellow" if row.rejects else ""),
        )
    return table


def _servers(rows: tuple[ServerRow, ...]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), expand=False)
    for col, justify in (
        ("server", "left"),
        ("KV usage", "right"),
        ("running", "right"),
        ("queued", "right"),
        (f"saturated? (usage > {KV_USAGE_HIGH:.0%} and queue growing)", "left"),
    ):
        table.add_column(col, justify=justify, no_wrap=True, overflow="fold")  # type: ignore[arg-type]
    for row in rows:
        if row.error is not None:
            table.add_row(row.name, "-", "-", "-", Text("NO DATA", style="bold white on red"))
            continue
        table.add_row(
            row.name,
            percent(row.token_usage, 1),
            count(row.running),
            count(row.queued),
            Text(str(row.verdict), style=VERDICT_STYLE[row.verdict]),
        )
    return table


def render(
    view: View, interval: float | None = None, *, live: bool = True, width: int | None = None
) -> RenderableType:
    t = view.totals
    now = datetime.datetime.fromtimestamp(view.at, datetime.UTC)
    title = Text.assemble(
        ("draftgen top", "bold"),
        f"  {view.source}",
        (f"  {view.phase}" if view.phase else "", "bold cyan"),
        f"  {now:%H:%M:%S} UTC",
    )
    parts: list[RenderableType] = [title]
    for alarm in view.alarms:
        parts.append(Text(f" {alarm} ", style="bold white on red"))
    state, state_style = JOB_STATE[t.state]
    finished = sum(1 for d in view.datasets if d.state not in ("running", "waiting"))
    progress = (
        f"{share(t.fraction)} of the token budget"
        if t.fraction is not None
        else f"{finished}/{len(view.datasets)} datasets done"
    )
    over = t.completion_budget is not None and t.completion_tokens >= t.completion_budget
    if t.fraction is not None and t.fraction < 1 and over:
        # 14,062/14,000 beside 99%: one dataset's overshoot fills none of another's budget
        progress += " (each dataset's own; overshoot counts for none)"
    parts.append(
        Text.assemble(
            ("job ", "bold"),
            (state, state_style),
            f"  {progress}",
            f"  completion {of(t.completion_tokens, t.completion_budget)}",
            f"  prompt {count(t.prompt_tokens)}",
            f"  samples {count(t.samples)}",
            f"  rejects {count(t.rejects)}",
        )
    )
    parts.append(
        Text.assemble(
            "    ",
            (f"{rate(t.rate)} tok/s", "bold"),
            f"  ETA {duration(t.eta_seconds)}",
            "  finish ",
            (
                "done" if t.done else clock(t.finish_at, view.at) if t.state == "running" else "-",
                "bold",
            ),
        )
    )
    if view.datasets:
        parts.append(_datasets(view.datasets, narrow=width is not None and width < NARROW))
    if view.servers:
        parts.append(_servers(view.servers))
    for note in view.notes:
        parts.append(Text(f"note: {note}", style="yellow"))
    if live:
        every = f" · refresh {interval:g}s" if interval else ""
        parts.append(Text(f"q or Ctrl-C quits{every}", style="dim"))
    return Group(*parts)
