"""Writing a command line from typed options: the one rule every contract's `argv()` follows."""

from __future__ import annotations

import enum


def options(*pairs: tuple[enum.StrEnum | str, object | None]) -> list[str]:
    """`[flag, value, ...]` for each pair whose value is set (None leaves the flag out, so the
    command's own default applies)."""
    out: list[str] = []
    for flag, value in pairs:
        if value is not None:
            out += [str(flag), str(value)]
    return out
