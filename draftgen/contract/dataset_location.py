"""Where a dataset comes from when it is on the Hugging Face hub: `hf://datasets/ORG/NAME
[@REVISION][/PATH]`, the hub's own address (the one `huggingface_hub`'s file system and pandas
read). draftgen resolves it in the local hub cache only (generator/rows/hf.py); the spec checks
its form here.
"""

from __future__ import annotations

from urllib.parse import unquote

HUB_DATASETS = "hf://datasets/"


def is_hub_dataset(source: str) -> bool:
    return source.startswith(HUB_DATASETS)


def parse_hub_dataset(source: str) -> tuple[str, str, str]:
    """`hf://datasets/ORG/NAME@REV/PATH` → ("ORG/NAME", "REV" or "main", "PATH" or ""); a
    ValueError saying how to write it otherwise. A revision with a slash is URL-encoded
    (`@refs%2Fconvert%2Fparquet`), as the hub's addresses write it."""
    parts = source[len(HUB_DATASETS) :].strip("/").split("/")
    if len(parts) < 2 or not parts[0] or not parts[1] or parts[1].startswith("@"):
        raise ValueError(
            f"{source!r}: write a hub dataset as hf://datasets/ORG/NAME[@REVISION][/PATH], "
            "e.g. hf://datasets/anon8231489123/ShareGPT_Vicuna_unfiltered"
        )
    name, at, revision = parts[1].partition("@")
    if at and not revision:
        raise ValueError(
            f"{source!r}: nothing after @; name the revision (a branch, tag or commit)"
        )
    revision = unquote(revision)
    if ".." in parts[2:] or ".." in revision.split("/") or name in (".", ".."):
        raise ValueError(
            f"{source!r}: `..` may not appear in it; name the dataset and file directly"
        )
    return f"{parts[0]}/{name}", revision or "main", "/".join(parts[2:])
