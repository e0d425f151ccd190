"""Counts written as quantities, the way kubectl reads them: `10M`, `1.5e7`, `250k`, `2Mi`, or a
plain whole number. Budgets of tens of millions of tokens are easier to write, and to read back,
that way; the parsed value is always a whole number, shown normalized (`10,000,000`) by
`validate` and `plan`. In the CRD such a field is int-or-string."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, WithJsonSchema

SUFFIXES = {
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}
PATTERN = r"^\s*[0-9]+(\.[0-9]*)?([eE][+]?[0-9]+|k|M|G|T|P|Ki|Mi|Gi|Ti)?\s*$"
_SHAPE = re.compile(PATTERN)
EXAMPLES = "10M, 1.5e7, 250k or 10000000"


def parse_quantity(value: Any) -> Any:
    """A quantity string → its whole number; anything else is left to the field's own type
    check (an int passes, a bool or a float is refused there). ValueError names the fix."""
    if isinstance(value, bool):
        raise ValueError(
            f"{value!r} is not a count: write a whole number or a quantity ({EXAMPLES})"
        )
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)  # YAML reads `1.5e7` unquoted as a float
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not _SHAPE.match(text):
        raise ValueError(
            f"{value!r} is not a count: write a whole number or a quantity ({EXAMPLES})"
        )
    suffix = next((s for s in sorted(SUFFIXES, key=len, reverse=True) if text.endswith(s)), "")
    try:
        number = Decimal(text[: len(text) - len(suffix)]) * SUFFIXES.get(suffix, 1)
    except InvalidOperation:
        raise ValueError(f"{value!r} is not a count ({EXAMPLES})") from None
    if number != number.to_integral_value():
        raise ValueError(
            f"{value!r} is {number.normalize():f}, not a whole number: write a whole count"
        )
    return int(number)


def at_least_one(value: int) -> int:
    if value < 1:
        raise ValueError(
            f"{value}: must be greater than or equal to 1 (for no limit, leave the field out)"
        )
    return value


def normalized(count: int | None) -> str:
    """`10000000` → `10,000,000` (None → `-`)."""
    return "-" if count is None else f"{count:,}"


Quantity = Annotated[
    int,
    BeforeValidator(parse_quantity),
    AfterValidator(at_least_one),
    WithJsonSchema(
        {
            # controller-gen's shape for resource.Quantity: a structural schema allows exactly
            # these two branches; `pattern` checks strings only, `minimum` numbers only.
            "x-kubernetes-int-or-string": True,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": PATTERN,
            "minimum": 1,
        }
    ),
]
"""A whole count ≥ 1, written as a number or a quantity string."""
