"""Where a model (weights or tokenizer) comes from: `hf://ORG/NAME[@REVISION]` on the Hugging Face
hub, else a local path (`file://` allowed), relative paths being relative to the job file.

Every site that reads `model.weights`, `model.tokenizer` or a manifest's `model` parses it here:
the server's `--model-path`, the generator's tokenizer, the planner's config.json, the export's
tokenizer and card, and the operator's offline and volume rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError

HF_SCHEME = "hf://"
FILE_SCHEME = "file://"


class ModelLocationError(DraftgenError, ValueError):
    """The location is not a hub id nor a path; the message shows the accepted forms."""

    exit_code = ExitCode.INVALID
    fix = "write spec.model.weights as hf://ORG/NAME, pvc://CLAIM/PATH or a path"


@dataclass(frozen=True)
class HubModel:
    """A model on the Hugging Face hub."""

    repo_id: str
    """`ORG/NAME`."""

    revision: str | None = None
    """Branch, tag or commit after `@`; None for the default branch."""


@dataclass(frozen=True)
class LocalModel:
    """A model directory on this machine or on a mounted volume."""

    path: str
    """As written, without `file://`; relative paths are relative to the job file."""

    @property
    def is_absolute(self) -> bool:
        return self.path.startswith("/")


ModelLocation = HubModel | LocalModel


def parse(location: str) -> ModelLocation:
    """`hf://org/name@rev` → HubModel("org/name", "rev"); anything else → LocalModel."""
    if not location.startswith(HF_SCHEME):
        return LocalModel(location.removeprefix(FILE_SCHEME))
    ref = location[len(HF_SCHEME) :].strip("/")
    repo_id, _, revision = ref.partition("@")
    parts = repo_id.strip("/").split("/")
    if len(parts) != 2 or not all(parts) or (_ and not revision):
        raise ModelLocationError(
            f"{location!r} is not a hub id: write hf://ORG/NAME, e.g. hf://moonshotai/Kimi-K2.5"
        )
    return HubModel("/".join(parts), revision or None)


def is_hub(location: str) -> bool:
    """True for `hf://…` (without validating it: see `parse`)."""
    return location.startswith(HF_SCHEME)


def loader_name(location: str) -> str:
    """What `from_pretrained` and SGLang's `--model-path` take: the hub id, or the path."""
    loc = parse(location)
    return loc.repo_id if isinstance(loc, HubModel) else loc.path


def model_name(location: str) -> str:
    """The model's name for a dataset card's `base_model`, never a local path: the hub id; for
    a directory in a Hugging Face cache (`…/models--ORG--NAME/snapshots/REV`) the id it holds;
    else the directory's own name (`/models/kimi-k2.5` → `kimi-k2.5`)."""
    loc = parse(location)
    if isinstance(loc, HubModel):
        return loc.repo_id
    parts = [p for p in loc.path.replace("\\", "/").split("/") if p not in ("", ".")]
    for part in reversed(parts):
        if part.startswith("models--") and part.count("--") >= 2:
            return "/".join(part.removeprefix("models--").split("--", 1))
    return parts[-1] if parts else loc.path
