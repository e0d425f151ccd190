"""Writing a command line from typed options: the one rule every contract's `argv()` follows; and
the report option the operator's Jobs answer through (`--report FILE`, their termination log)."""

from __future__ import annotations

import argparse
import enum
from pathlib import Path


def options(*pairs: tuple[enum.StrEnum | str, object | None]) -> list[str]:
    """`[flag, value, ...]` for each pair whose value is set (None leaves the flag out, so the
    command's own default applies)."""
    out: list[str] = []
    for flag, value in pairs:
        if value is not None:
            out += [str(flag), str(value)]
    return out


def add_report_argument(parser: argparse.ArgumentParser, flag: str, what: str) -> None:
    """`flag FILE` (a Path, default None): `what` the command writes there as JSON; in a cluster
    the operator passes the container's termination log and reads it back."""
    parser.add_argument(
        flag,
        type=Path,
        default=None,
        help=f"{what} as JSON here (in a cluster: the termination log)",
    )
