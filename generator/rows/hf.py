"""Hugging Face datasets on this machine: which files a dataset's `source` and `split` name.

Three shapes besides a plain file or directory, all read offline (nothing is ever downloaded):

- a directory written by `datasets`' `save_to_disk`, recognized by its shape: `state.json` and
  `dataset_info.json` beside `data-NNNNN-of-NNNNN.arrow` files (one `Dataset`; the files in the
  order `state.json` lists them), or `dataset_dict.json` listing the splits, each a subdirectory
  of that shape (a `DatasetDict`);
- `hf://datasets/ORG/NAME[@REVISION][/PATH]`, the hub's own address of a dataset, resolved in the
  local hub cache only (`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`:
  `datasets--ORG--NAME/snapshots/COMMIT/...`, the revision through `refs/`), where
  `huggingface-cli download` or `hf download --repo-type dataset` left it;
- in a hub dataset or any directory, a split is the files `datasets` would give that split: a
  sharded `data/SPLIT-00000-of-00001.*` name, else a directory named for the split, else a file
  name holding it (`train`/`training`, `validation`/`valid`/`dev`/`val`,
  `test`/`testing`/`eval`/`evaluation`, between non-letters), else everything is `train`
  (the same rules, in the same order, as `datasets.data_files.get_data_patterns`).

With no `split`, a `save_to_disk` or hub dataset of one split is read whole; one of several
splits is an error listing them (mixing `train` and `test` silently is worse). A plain directory
without `split` is read whole, as it always was.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from draftgen.contract.dataset_location import is_hub_dataset, parse_hub_dataset
from draftgen.generator.rows.sources import SourceError, list_files, resolve_source

_KEYWORDS = {
    "train": ("train", "training"),
    "validation": ("validation", "valid", "dev", "val"),
    "test": ("test", "testing", "eval", "evaluation"),
}
_SEP = r"[-._ 0-9]"
_SHARDED = re.compile(r"^data/(?P<split>\w+(?:\.\w+)*)-\d{5}-of-\d{5}[^/]*\.[^/]*$")
# Metadata files that share a data suffix (`.json`) but hold no rows.
_METADATA = {"dataset_info.json", "dataset_infos.json", "state.json", "dataset_dict.json"}


def hub_cache() -> Path:
    """Where `huggingface_hub` keeps downloads, by the same variables in the same order."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return Path(os.path.expandvars(os.environ[var])).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface"
    )
    return Path(os.path.expandvars(home)).expanduser() / "hub"


def _cache_named() -> str:
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        if os.environ.get(var):
            return f"from ${var}"
    return "the default"


def hub_snapshot(source: str) -> Path:
    """The local path an `hf://datasets/...` source names in the hub cache; `SourceError` with
    the download command when the dataset or its revision is not there."""
    repo_id, revision, inner = parse_hub_dataset(source)
    cache = hub_cache()
    repo = cache / ("datasets--" + repo_id.replace("/", "--"))
    download = (
        f"download it where there is network (hf download {repo_id} --repo-type dataset"
        + (f" --revision {revision}" if revision != "main" else "")
        + "), then copy that cache here or set HF_HUB_CACHE to the cache holding it; draftgen "
        "never downloads a dataset"
    )
    if not (repo / "snapshots").is_dir():
        raise SourceError(
            f"{source}: {repo_id} is not in the local hub cache {cache} ({_cache_named()}); "
            + download
        )
    snapshots = sorted(p.name for p in (repo / "snapshots").iterdir() if p.is_dir())
    ref = repo / "refs" / revision
    commit = ref.read_text().strip() if ref.is_file() else revision
    if not (repo / "snapshots" / commit).is_dir():
        if revision == "main" and len(snapshots) == 1 and not (repo / "refs").is_dir():
            commit = snapshots[0]  # a cache copied without refs/: its one revision
        else:
            refs = sorted(p.name for p in (repo / "refs").glob("*") if p.is_file())
            raise SourceError(
                f"{source}: revision {revision} of {repo_id} is not in the local hub cache "
                f"{cache} (it holds refs {', '.join(refs) or 'none'}, snapshots "
                f"{', '.join(snapshots) or 'none'}); name one of those after @, or " + download
            )
    path = repo / "snapshots" / commit / inner
    if not path.exists():
        raise SourceError(
            f"{source}: {inner} is not in {repo_id}'s snapshot {commit} in the local hub cache; "
            "check the path after the dataset's name"
        )
    return path


def saved_shape(path: Path) -> str | None:
    """`dict` for a `save_to_disk` DatasetDict, `dataset` for a Dataset, None otherwise."""
    if (path / "dataset_dict.json").is_file():
        return "dict"
    if (path / "state.json").is_file() and (path / "dataset_info.json").is_file():
        return "dataset"
    return None


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SourceError(f"{path}: unreadable ({err}); save the dataset again") from None
    if not isinstance(data, dict):
        raise SourceError(f"{path}: not a JSON object; save the dataset again")
    return data


def _saved_dataset_files(path: Path) -> list[Path]:
    """A `save_to_disk` Dataset's Arrow files, in the order its `state.json` lists them."""
    state = _read_json(path / "state.json")
    if state.get("_indices_data_files"):
        raise SourceError(
            f"{path}: saved with an indices mapping (an older datasets); save it again after "
            "dataset.flatten_indices()"
        )
    entries = state.get("_data_files")
    if not isinstance(entries, list) or not entries:
        raise SourceError(f"{path}/state.json lists no data files; save the dataset again")
    files = [path / str(e.get("filename", "")) for e in entries if isinstance(e, dict)]
    missing = [f.name for f in files if not f.is_file()]
    if missing or not files:
        raise SourceError(
            f"{path}: {', '.join(missing) or 'data files'} listed in state.json missing; the "
            "copy is incomplete: copy the whole directory save_to_disk wrote"
        )
    return files


def _split_error(split: str | None, splits: list[str], where: Path | str) -> SourceError:
    if split is None:
        return SourceError(
            f"{where} holds the splits {', '.join(splits)}; choose one with split: "
            f"{splits[0]} (spec.datasets[].split)",
            field="split",
        )
    return SourceError(
        f"{split!r} is not a split of {where}; its splits are {', '.join(splits) or 'none'}: "
        "set split to one of them",
        field="split",
    )


def _saved_files(path: Path, shape: str, split: str | None) -> list[Path]:
    if shape == "dataset":
        saved = _read_json(path / "state.json").get("_split")
        if split is not None and split != saved:
            raise SourceError(
                f"{path} is one saved Dataset (split {saved or 'not recorded'}), not a "
                "DatasetDict; leave out split" + (f" or write split: {saved}" if saved else ""),
                field="split",
            )
        return _saved_dataset_files(path)
    splits = _read_json(path / "dataset_dict.json").get("splits")
    splits = [str(s) for s in splits] if isinstance(splits, list) else []
    if split is None and len(splits) == 1:
        split = splits[0]
    if split is None or split not in splits:
        raise _split_error(split, splits, path)
    return _saved_dataset_files(path / split)


def _in_dir(rel: str, keyword: str) -> bool:
    """`**/{kw}/**`, `**/{kw}[sep]*/**`, `**/*[sep]{kw}/**`, `**/*[sep]{kw}[sep]*/**`."""
    word = re.compile(rf"^(?:.*{_SEP})?{re.escape(keyword)}(?:{_SEP}.*)?$")
    return any(word.match(part) for part in rel.split("/")[:-1])


def _in_name(rel: str, keyword: str) -> bool:
    """`**/{kw}[sep]*`, `**/*[sep]{kw}[sep]*`."""
    name = rel.rsplit("/", 1)[-1]
    return re.match(rf"^(?:.*{_SEP})?{re.escape(keyword)}{_SEP}", name) is not None


def split_files(root: Path, files: list[Path]) -> dict[str, list[Path]]:
    """The files of each split, by `datasets`' default rules (the module docstring); `files`
    are `root`'s data files in reading order, which each split keeps."""
    rel = {f: f.relative_to(root).as_posix() for f in files}
    sharded: dict[str, list[Path]] = {}
    for f, r in rel.items():
        m = _SHARDED.match(r)
        if m:
            sharded.setdefault(m["split"], []).append(f)
    if sharded:
        known = [s for s in _KEYWORDS if s in sharded]
        return {s: sharded[s] for s in known + sorted(set(sharded) - set(known))}
    for test in (_in_dir, _in_name):
        found = {
            split: [f for f, r in rel.items() if any(test(r, k) for k in keywords)]
            for split, keywords in _KEYWORDS.items()
        }
        found = {s: fs for s, fs in found.items() if fs}
        if found:
            return found
    return {"train": list(files)} if files else {}


def _directory_files(path: Path, split: str | None, hub: bool, where: str) -> list[Path]:
    files = [f for f in list_files(path) if f.name not in _METADATA]
    if not files:
        raise SourceError(f"{path}: holds only metadata files, no data; check the source")
    if split is None and not hub:
        return files  # a plain directory: every file, as before splits were known
    splits = split_files(path, files)
    if split is None and len(splits) == 1:
        split = next(iter(splits))
    if split is None or split not in splits:
        raise _split_error(split, list(splits), where)
    return splits[split]


def source_files(source: str, split: str | None, base_dir: Path) -> list[Path]:
    """The data files `spec.datasets[]`' `source` and `split` name, in reading order;
    `SourceError` (its `field` the one at fault) when there are none."""
    hub = is_hub_dataset(source)
    path = hub_snapshot(source) if hub else resolve_source(source, base_dir)
    if path.is_dir():
        shape = saved_shape(path)
        if shape is not None:
            return _saved_files(path, shape, split)
        return _directory_files(path, split, hub, source if hub else str(path))
    if split is not None and path.exists():
        raise SourceError(
            f"{path} is one file; a split is chosen among the files of a directory, a "
            "save_to_disk dataset or an hf://datasets/ source: leave out split, or point source "
            "at the directory",
            field="split",
        )
    return list_files(path)
