"""Kubernetes-style conditions: one per type, transition time kept while the status holds."""

from __future__ import annotations

import datetime
from typing import Literal

from draftgen.spec import Condition

ConditionStatus = Literal["True", "False", "Unknown"]

CONDITION_TYPES = ("SpecValid", "ServerReady", "Generating", "Suspended", "Complete", "Failed")


def now_rfc3339() -> str:
    return (
        datetime.datetime.now(datetime.UTC)
        .replace(microsecond=0)
        .isoformat()
        .replace("+00:00", "Z")
    )


def parse_time(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def set_condition(
    conditions: list[Condition],
    type_: str,
    status: bool | ConditionStatus,
    reason: str,
    message: str,
    generation: int | None,
    now: str,
) -> None:
    """Replace the condition of `type_`; its transition time changes only with its status."""
    value: ConditionStatus = status if isinstance(status, str) else ("True" if status else "False")
    for i, cond in enumerate(conditions):
        if cond.type == type_:
            since = cond.last_transition_time if cond.status == value else now
            conditions[i] = Condition(
                type=type_,
                status=value,
                reason=reason,
                message=message,
                last_transition_time=since or now,
                observed_generation=generation,
            )
            return
    conditions.append(
        Condition(
            type=type_,
            status=value,
            reason=reason,
            message=message,
            last_transition_time=now,
            observed_generation=generation,
        )
    )
    conditions.sort(
        key=lambda c: (
            CONDITION_TYPES.index(c.type) if c.type in CONDITION_TYPES else len(CONDITION_TYPES)
        )
    )


def get_condition(conditions: list[Condition], type_: str) -> Condition | None:
    for cond in conditions:
        if cond.type == type_:
            return cond
    return None


def drop_condition(conditions: list[Condition], type_: str) -> None:
    conditions[:] = [c for c in conditions if c.type != type_]
