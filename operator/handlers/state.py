"""Process-wide operator state shared by the handler modules."""

from __future__ import annotations

import threading

from ..events import EventLimiter
from ..reconcile import Reconciler
from ..settings import OperatorSettings

SETTINGS = OperatorSettings.from_env()
"""Read once at import: the timer interval is fixed when the handlers are registered."""

EVENTS = EventLimiter()
"""Rate limits of the Events posted about each GenerationJob (by uid)."""

_reconciler: Reconciler | None = None
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def set_reconciler(reconciler: Reconciler | None) -> None:
    global _reconciler
    _reconciler = reconciler


def reconciler() -> Reconciler:
    if _reconciler is None:
        raise RuntimeError("the operator's startup handler has not run")
    return _reconciler


def lock_for(uid: str) -> threading.Lock:
    """One lock per GenerationJob: the timer and the change handlers never interleave."""
    with _locks_guard:
        return _locks.setdefault(uid, threading.Lock())


def forget(uid: str) -> None:
    with _locks_guard:
        _locks.pop(uid, None)
    EVENTS.forget(uid)
