"""Why a tokenizer failed to load when the cause is a missing Python package, said so that the
user can fix it: which package, where it was needed, and the two fixes (install it here, or run
the draftgen image, which carries what real tokenizers import).

Tokenizers shipped as remote code import what they need (Kimi-K2 / K2.5's `tokenization_kimi.py`
imports `tiktoken`; SentencePiece tokenizers need `sentencepiece` and often `protobuf`).
transformers reports a remote-code file's missing imports as an `ImportError` ("This modeling file
requires the following packages that were not found in your environment: a, b. Run `pip install
a b`"); an import inside the tokenizer's own code raises `ModuleNotFoundError`; transformers' own
classes say "requires the SentencePiece library".
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version

IMAGE = "ghcr.io/draftgen/draftgen"
IMAGE_PACKAGES = ("tiktoken", "sentencepiece", "protobuf")
# Import name -> the distribution that provides it, where they differ.
DISTRIBUTIONS = {
    "google": "protobuf",
    "google.protobuf": "protobuf",
    "yaml": "pyyaml",
    "sklearn": "scikit-learn",
    "PIL": "pillow",
    "cv2": "opencv-python",
}
_REMOTE = re.compile(r"following packages that were not found in your environment: ([^.]+)\.")
_LIBRARY = re.compile(r"requires the (\w+) library")


def missing_packages(err: BaseException) -> list[str]:
    """The pip distributions an import error says are missing (empty if it is no such error)."""
    if not isinstance(err, ImportError):
        return []
    text = str(err)
    names: list[str] = []
    if m := _REMOTE.search(text):
        names = [n.strip() for n in m.group(1).split(",") if n.strip()]
    elif isinstance(err, ModuleNotFoundError) and err.name:
        names = [err.name]
    elif m := _LIBRARY.search(text):
        names = [m.group(1).lower()]
    out: list[str] = []
    for name in names:
        dist = (
            DISTRIBUTIONS.get(name) or DISTRIBUTIONS.get(name.split(".")[0]) or name.split(".")[0]
        )
        if dist not in out:
            out.append(dist)
    return out


def _image_tag() -> str:
    try:
        return f"{IMAGE}:{version('draftgen')}"
    except PackageNotFoundError:
        return IMAGE


def missing_package_message(err: BaseException, location: str, where: str) -> str | None:
    """The whole error message for a tokenizer that failed on a missing package, else None."""
    packages = missing_packages(err)
    if not packages:
        return None
    listed = ", ".join(packages)
    in_image = all(p in IMAGE_PACKAGES for p in packages)
    fix = f"`pip install {' '.join(packages)}` in the environment that runs draftgen"
    if in_image:
        fix += f", or run draftgen from the image {_image_tag()}, which has it"
    else:
        fix += (
            f" (in a cluster: an image built FROM {_image_tag()} that adds it, set as "
            "spec.generator.image)"
        )
    return (
        f"{where}: the tokenizer in {location!r} needs the Python package {listed}, which is "
        f"not installed here ({type(err).__name__}: {err}). Fix: {fix}"
    )
