"""The base every GenerationJob model shares: camelCase on the wire, unknown keys refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

# Units and acronyms keep their capitals on the wire: sizeGBPerRank, gpuMemoryGiB,
# allowLossyKVCache.
_UPPER_WORDS = {"gb": "GB", "gib": "GiB", "kv": "KV"}


def to_camel(name: str) -> str:
    """`size_gb_per_rank` → `sizeGBPerRank`; `kv_cache_dtype` → `kvCacheDtype`."""
    first, *rest = name.split("_")
    return first + "".join(_UPPER_WORDS.get(w, w.capitalize()) for w in rest)


class SpecModel(BaseModel):
    """A part of the GenerationJob API.

    Fields are snake_case in Python and camelCase in YAML, as Kubernetes users expect.
    Each field's docstring becomes its description in the generated CRD.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        use_attribute_docstrings=True,
        validate_default=True,
        frozen=False,
    )

    def to_wire(self) -> dict:
        """The camelCase dictionary a user would write, without unset optional fields."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class StatusModel(SpecModel):
    """Status is written by draftgen itself; tolerate keys from newer versions."""

    model_config = ConfigDict(extra="ignore")
