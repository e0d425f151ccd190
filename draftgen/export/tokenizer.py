"""The target model's tokenizer, for the formats that carry text. Token ids are never re-made
from text here: the tokenizer only decodes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from draftgen.contract.model_location import HubModel, parse

from .records import ExportError, Manifests


def tokenizer_location(root: Path, manifests: Manifests, override: str | None) -> str:
    """`--tokenizer`, else the model the job manifest names, resolved to something loadable."""
    if override:
        return override
    model = manifests.model
    if not model:
        raise ExportError(
            f"{root}/manifest.json names no model; pass --tokenizer PATH (the target model's "
            "tokenizer directory)"
        )
    location = parse(model)
    if isinstance(location, HubModel):
        return location.repo_id
    path = Path(location.path)
    if path.is_absolute():
        return str(path)
    # Job files name models relative to themselves; the output directory usually sits next to
    # the job file or below the working directory.
    for base in (Path(root), Path(root).parent, Path.cwd()):
        if (base / path).exists():
            return str((base / path).resolve())
    raise ExportError(
        f"the job manifest names the model {model!r}, which is not found relative to {root}, "
        "its parent or the working directory; pass --tokenizer PATH"
    )


def load_tokenizer(location: str, trust_remote_code: bool = False) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(location, trust_remote_code=trust_remote_code)
    except Exception as err:  # transformers raises many types for a missing or odd tokenizer
        hint = "" if trust_remote_code else " (Kimi's own tokenizer needs --trust-remote-code)"
        raise ExportError(
            f"cannot load the tokenizer from {location!r}: {err}{hint}; pass --tokenizer PATH "
            "to a local tokenizer directory"
        ) from err


def decode(tokenizer: Any, ids: list[int]) -> str:
    """Text of `ids` with every special token kept and no whitespace clean-up."""
    return tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
