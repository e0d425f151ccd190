#!/usr/bin/env python3
"""Build tiny random-weight test models and offline tokenizers for a real SGLang server on CPU.

Run with the SGLang venv's interpreter (it has torch, transformers, tokenizers, safetensors):

    .cache/venv-sglang/bin/python scripts/build_test_models.py [--out DIR] [--force] [--check]

The models, and how they are built, are described in scripts/test_models/__init__.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The SGLang venv has no draftgen installed (and runs with PYTHONSAFEPATH): reach the builder
# package (scripts.test_models) and the one draftgen module it shares from the source tree.
# Appended, not prepended: the root's top-level `operator/` must not shadow the standard library.
sys.path.append(str(Path(__file__).resolve().parent.parent))

from scripts.test_models.cli import main

if __name__ == "__main__":
    sys.exit(main())
