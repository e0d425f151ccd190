"""Times as every draftgen file and log writes them: RFC 3339 / ISO 8601 in UTC with a `Z`
(`2026-12-01T14:08:00Z`), never a bare epoch number or the locale's `asctime`; durations as
`17h20m` (the ETAs of the planner, the progress log, `top` and the operator's status)."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime


def rfc3339(epoch: float | None = None, fraction: bool = False) -> str:
    """`1764597680.5` → `2026-12-01T14:01:20Z` (`...20.500Z` with `fraction`)."""
    moment = datetime.fromtimestamp(time.time() if epoch is None else epoch, tz=UTC)
    text = moment.isoformat(timespec="milliseconds" if fraction else "seconds")
    return text.replace("+00:00", "Z")


class IsoFormatter(logging.Formatter):
    """A log formatter whose `%(asctime)s` is ISO 8601 UTC with milliseconds."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return rfc3339(record.created, fraction=True)


def format_duration(seconds: float | None) -> str:
    """`62400` → `17h20m`; `2700` → `45m`; `42` → `42s`; None or negative → `` (unknown)."""
    if seconds is None or seconds < 0 or seconds != seconds or seconds == float("inf"):
        return ""
    total = round(seconds)
    if total < 60:
        return f"{total}s"
    minutes = (total + 30) // 60
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
