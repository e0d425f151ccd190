"""Where `hf://` weights are once the model download Job put them on the models volume, and the
spec as the pods then see it. Pure; shared by the server, generator and first-run renderers."""

from __future__ import annotations

import copy
from typing import Any

from draftgen.contract import download_cli
from draftgen.contract.model_location import HubModel, is_hub, parse
from draftgen.spec import GenerationJobSpec


def downloads(spec: GenerationJobSpec) -> bool:
    """The operator fetches the weights first: `hf://` weights with a models volume."""
    return spec.model.volume is not None and is_hub(spec.model.weights)


def volume_path(spec: GenerationJobSpec) -> str:
    """Where the download Job puts the weights (and the server reads them)."""
    assert spec.model.volume is not None
    repo = parse(spec.model.weights)
    assert isinstance(repo, HubModel)
    return download_cli.hub_dir(spec.model.volume.mount_path, repo.repo_id)


def on_volume(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as the pods see it once the weights are on the volume: `hf://` weights (and a
    tokenizer that is the same repository) become the volume path, the revision is dropped (it
    was fetched). Anything else comes back unchanged."""
    model = spec.get("model") or {}
    weights, volume = model.get("weights"), model.get("volume")
    if not (isinstance(weights, str) and is_hub(weights) and isinstance(volume, dict)):
        return spec
    mount = str(volume.get("mountPath") or "")
    repo = parse(weights)
    if not mount or not isinstance(repo, HubModel):
        return spec
    out = copy.deepcopy(spec)
    path = download_cli.hub_dir(mount, repo.repo_id)
    out["model"]["weights"] = path
    if model.get("tokenizer") in (None, weights):
        out["model"].pop("tokenizer", None)
    out["model"].pop("revision", None)
    return out


def tokenizer_offline(spec: GenerationJobSpec) -> bool:
    """The pods load the tokenizer from a path (local, or the downloaded weights): no hub."""
    if not is_hub(spec.model.tokenizer_location):
        return True
    return downloads(spec) and spec.model.tokenizer in (None, spec.model.weights)
