"""The command line: build each model into a temporary directory, check it, and move it in place;
leave a model alone when its recipe is unchanged.

Idempotent: each model directory holds ``.recipe`` with a hash of the shared modules of this
package, the model's own modules (RECIPE_FILES), and the library versions; when it matches, the
model is left alone (a run then takes well under a second).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import time
from pathlib import Path

from .chatml import build_chatml
from .checks import check
from .kimi import build_kimi
from .kimi_tiktoken import build_kimi_tiktoken

PACKAGE = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE.parent.parent
RECIPE_VERSION = "1"

BUILDERS = {
    "tiny-kimi": build_kimi,
    "tiny-chatml": build_chatml,
    "tiny-kimi-tiktoken": build_kimi_tiktoken,
}

# A change in a model's own files rebuilds that model alone; a change in any other module here
# (or in the one draftgen module the builder imports) rebuilds every model. tiny-kimi-tiktoken
# copies tiny-kimi's weights, so tiny-kimi's module is its own too.
RECIPE_FILES = {
    "tiny-kimi": ("kimi.py",),
    "tiny-chatml": ("chatml.py",),
    "tiny-kimi-tiktoken": ("kimi.py", "kimi_tiktoken.py", "tokenization_tinykimi.py"),
}
SHARED_FROM_DRAFTGEN = (REPO_ROOT / "draftgen" / "testing" / "merges.py",)


def recipe_hash(name: str) -> str:
    from importlib.metadata import version

    from .bpe import bytes_to_unicode_source

    own = {f for files in RECIPE_FILES.values() for f in files}
    shared = [p for p in sorted(PACKAGE.glob("*.py")) if p.name not in own]
    h = hashlib.sha256()
    for path in [*shared, *SHARED_FROM_DRAFTGEN]:
        h.update(path.read_bytes())
    # the byte map every model's vocabulary is made of lives in the remote-code file
    h.update(bytes_to_unicode_source().encode())
    for own_file in RECIPE_FILES[name]:
        h.update((PACKAGE / own_file).read_bytes())
    libs = "|".join(f"{m}={version(m)}" for m in ("torch", "transformers", "tokenizers"))
    h.update(f"{name}|{RECIPE_VERSION}|{libs}".encode())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Build tiny random-weight test models and offline tokenizers for a real SGLang"
        " server on CPU."
    )
    ap.add_argument(
        "--out",
        default=os.environ.get("DRAFTGEN_CACHE", str(REPO_ROOT / ".cache")) + "/models",
        help="output directory (default: $DRAFTGEN_CACHE/models or .cache/models)",
    )
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    ap.add_argument("--check", action="store_true", help="load and check the tokenizers")
    ap.add_argument("--only", choices=sorted(BUILDERS), action="append")
    args = ap.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    out_root = Path(args.out)
    out_root.mkdir(parents=True, exist_ok=True)
    for name in args.only or list(BUILDERS):
        d = out_root / name
        stamp = d / ".recipe"
        want = recipe_hash(name)
        if not args.force and stamp.exists() and stamp.read_text().strip() == want:
            print(f"{name}: up to date ({d})")
        else:
            t0 = time.time()
            tmp = out_root / f".{name}.tmp"
            if tmp.exists():
                shutil.rmtree(tmp)
            tmp.mkdir(parents=True)
            BUILDERS[name](tmp)
            check(tmp, name, verbose=False)
            (tmp / ".recipe").write_text(want + "\n")
            if d.exists():
                shutil.rmtree(d)
            tmp.rename(d)
            print(f"{name}: built in {time.time() - t0:.1f}s ({d})")
        if args.check:
            check(d, name)
    return 0
