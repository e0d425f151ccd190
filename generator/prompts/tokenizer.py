"""Loading the target model's tokenizer: where `spec.model.tokenizer` (or the weights) points,
`AutoTokenizer.from_pretrained` with an error that names the setting, and the encode arguments
that match SGLang's."""

from __future__ import annotations

import os
import sys
import threading
import weakref
from pathlib import Path
from typing import Any

from draftgen.contract import model_location
from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError
from draftgen.generator.prompts.tokenizer_imports import missing_package_message


class TokenizerError(DraftgenError, RuntimeError):
    """The tokenizer cannot be loaded or a tokenizer worker died."""

    exit_code = ExitCode.INVALID
    fix = "point spec.model.tokenizer (or the weights) at a loadable tokenizer"


def resolve_tokenizer_location(location: str, base_dir: Path) -> str:
    """`hf://org/name` → the hub id `org/name`; a relative path → below `base_dir`."""
    where = model_location.parse(location)
    if isinstance(where, model_location.HubModel):
        return where.repo_id
    path = Path(where.path)
    return str(path if path.is_absolute() else Path(base_dir) / path)


def load_tokenizer(location: str, trust_remote_code: bool) -> Any:
    """`AutoTokenizer.from_pretrained`, with an error that says what was tried."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one process per core already
    from transformers import AutoTokenizer

    where = "model.tokenizer (or model.weights when no tokenizer is given)"
    if Path(location).is_absolute() and not Path(location).exists():
        raise TokenizerError(
            f"{where}: {location} does not exist; relative paths are resolved from the job file's "
            "directory; write an existing directory holding the tokenizer, or hf://ORG/NAME"
        )
    if not Path(location).exists() and os.environ.get("HF_HUB_OFFLINE") != "1":
        # Without network huggingface_hub retries quietly for most of a minute: say what waits.
        print(
            f"tokenizer: fetching {location} from the Hugging Face hub (a cached copy is used if "
            "the hub cannot be reached, after huggingface_hub's retries of up to a minute; "
            "HF_HUB_OFFLINE=1 reads the local cache only)",
            file=sys.stderr,
            flush=True,
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(location, trust_remote_code=trust_remote_code)
    except Exception as err:  # transformers raises OSError, ValueError, ImportError, ...
        if (missing := missing_package_message(err, location, where)) is not None:
            raise TokenizerError(missing) from None
        hint = (
            "the directory holds no loadable tokenizer"
            if Path(location).is_absolute()
            else "as a hub id it needs network access (is HF_HUB_OFFLINE set?) or a cached copy"
        )
        raise TokenizerError(
            f"{where}: cannot load a tokenizer from {location!r} ({hint}): "
            f"{type(err).__name__}: {err}. Point it at the model's tokenizer directory or "
            "hf://ORG/NAME; set model.trustRemoteCode: true if the tokenizer ships its own code"
        ) from None
    # The prompt limit is the server's max_req_input_len (prompt_too_long rejects), not the
    # tokenizer config's model_max_length, whose "sequence too long" warning would only mislead.
    tokenizer.model_max_length = int(1e30)
    return tokenizer


_LOCKS: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def tokenizer_lock(tokenizer: Any) -> threading.Lock:
    """The one lock of this tokenizer object: a fast tokenizer is not safe to share between
    threads (an encode sets its truncation and padding), so every thread of the generator's own
    process that encodes or decodes with it (the feeds' inline rendering, the chains' reply
    reading, the quality facts) holds this lock."""
    with _LOCKS_GUARD:
        lock = _LOCKS.get(tokenizer)
        if lock is None:
            lock = _LOCKS[tokenizer] = threading.Lock()
        return lock


def encode_kwargs_for(tokenizer: Any) -> dict[str, Any]:
    """`add_special_tokens=False` only where encoding would add specials (as SGLang does)."""
    try:
        adds = len(tokenizer.encode("")) > 0
    except Exception:
        adds = True
    return {"add_special_tokens": False} if adds else {}
