"""The generator's log as JSON lines (`--log-format json`, what the operator sets, so log stacks
parse it): our records, Python warnings, the libraries' records and the spawned tokenizer
workers' records, each one object a line; a progress record carries its summary's fields."""

from __future__ import annotations

import datetime
import json
import logging
import os
import sys
from typing import Any

PROGRESS_FIELD = "progress"
"""The log record attribute carrying a progress summary (JsonFormatter merges it in)."""


class JsonFormatter(logging.Formatter):
    """`--log-format json`: every record one JSON object on one line; a progress record carries
    its summary's fields at the top level (`"event": "progress"`)."""

    def format(self, record: logging.LogRecord) -> str:
        obj: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        summary = getattr(record, PROGRESS_FIELD, None)
        if isinstance(summary, dict):
            obj["event"] = "progress"
            obj.update(summary)
        if record.exc_info:
            obj["exception"] = self.formatException(record.exc_info)
        return json.dumps(obj, ensure_ascii=False, default=str)


LIBRARY_LOGGERS = ("transformers",)
"""Libraries that print through a handler of their own (transformers warns at import when
PyTorch is absent, as in the image): in JSON mode their records go through ours instead."""


class _ToRootHandlers(logging.Filter):
    """On a library's logger: hand each record to the root logger's handlers, and drop it from
    the library's own handler (which would write a plain-text line)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for handler in logging.getLogger().handlers:
            if record.levelno >= handler.level:
                handler.handle(record)
        return False


def json_logging(handler: logging.Handler) -> None:
    """Every line of the log one JSON object: our records, Python warnings, and the libraries'
    records (before the libraries are imported: their import-time warnings too)."""
    handler.setFormatter(JsonFormatter())
    os.environ[LOG_FORMAT_ENV] = "json"  # for the spawned tokenizer workers
    logging.captureWarnings(True)
    for name in LIBRARY_LOGGERS:
        library = logging.getLogger(name)
        if not any(isinstance(f, _ToRootHandlers) for f in library.filters):
            library.addFilter(_ToRootHandlers())


LOG_FORMAT_ENV = "DRAFTGEN_LOG_FORMAT"
"""Set by `json_logging` for the tokenizer workers (spawned processes start unconfigured)."""


def json_logging_from_env() -> bool:
    return os.environ.get(LOG_FORMAT_ENV) == "json"


def worker_logging() -> None:
    """In a spawned worker: JSON lines on stderr too when the generator logs JSON."""
    if not json_logging_from_env():
        return
    handler = logging.StreamHandler(sys.stderr)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    json_logging(handler)
