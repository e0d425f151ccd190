"""Credentials in URLs never reach a log line or an output file.

`--server https://user:password@host` is how some proxies want to be reached; the password
must not then appear in the log, in every record's `meta.server`, in metric labels or in error
messages. `redact_url` hides a URL's user-info and the values of query parameters that look like
credentials; `redact_text` does the same for every URL inside a text; `RedactingFilter` applies
it to every log record of a handler.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["MASK", "RedactingFilter", "redact_text", "redact_url"]

MASK = "***"
_SECRET_PARAM = re.compile(r"(?i)(pass|secret|token|key|auth|sig|credential)")
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")


def redact_url(url: str) -> str:
    """`url` with its user-info replaced by `***` and credential-like query values masked."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not parseable as a URL: mask anything that looks like user-info
        return re.sub(r"//[^/@\s]*@", f"//{MASK}@", url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_PARAM.search(k) for k, _ in pairs):
            query = urlencode(
                [(k, MASK if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*"
            )
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str) -> str:
    """`text` with every URL in it redacted."""
    if "://" not in text:
        return text
    return _URL.sub(lambda m: redact_url(m.group(0)), text)


class RedactingFilter(logging.Filter):
    """Redacts URLs in the formatted message of every record passing through."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact_text(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True
