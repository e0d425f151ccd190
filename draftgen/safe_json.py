"""JSON from untrusted rows, bounded: a parse error, a number longer than Python converts
(4,300 digits), nesting past the parser's recursion or deeper than `MAX_DEPTH` all come out as one
`JsonLimitError` with a detail for a person, never as a traceback that stops the job.

The depth bound is far above any real conversation or tool schema, and low enough that every
later step that walks a row (canonical JSON for the row key, chat templates) stays within the
interpreter's recursion limit.
"""

from __future__ import annotations

import json
from typing import Any

from draftgen.errors import DraftgenError, ExitCode

MAX_DEPTH = 100
"""Deepest nesting of lists/objects a row (or a JSON string inside one) may have."""

_DECODER = json.JSONDecoder()


class JsonLimitError(DraftgenError, ValueError):
    """Text that is not JSON this program will take; `detail` says why."""

    exit_code = ExitCode.INVALID
    fix = "shorten or flatten the row (it is recorded as a reject; the run goes on)"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def depth_error(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """Why `value` is nested too deeply, or None. Walks iteratively (no recursion to exhaust)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return f"nested deeper than {limit} levels"
        stack.extend((child, depth + 1) for child in children)
    return None


def raw_decode(text: str, pos: int = 0) -> tuple[Any, int]:
    """`json.JSONDecoder.raw_decode`, bounded (see the module docstring)."""
    try:
        value, end = _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as err:
        raise JsonLimitError(f"{err.msg} at character {err.pos}") from None
    except RecursionError:
        raise JsonLimitError("nested too deeply for the parser") from None
    except ValueError as err:  # a number past sys.get_int_max_str_digits()
        raise JsonLimitError(_number_detail(err)) from None
    problem = depth_error(value)
    if problem is not None:
        raise JsonLimitError(problem)
    return value, end


def loads(text: str) -> Any:
    """`json.loads`, bounded (see the module docstring)."""
    start = len(text) - len(text.lstrip())
    value, end = raw_decode(text, start)
    if text[end:].strip():
        raise JsonLimitError(f"Extra data at character {end}")
    return value


def _number_detail(err: ValueError) -> str:
    message = str(err)
    if "integer string conversion" in message:
        return (
            "a number has more digits than the 4300 Python converts; "
            + message.split(":")[-1].split(";")[0].strip()
        )
    return message
