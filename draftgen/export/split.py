"""Train/validation split by sample id: a hash, so a sample stays in its split across exports,
reruns, resumed jobs and added data, and repeated copies never leak across the split."""

from __future__ import annotations

import hashlib

TRAIN = "train"
VALIDATION = "validation"


def unit_hash(key: str, seed: int | str, salt: str) -> float:
    """A stable number in [0, 1) for `key`; `salt` keeps independent uses uncorrelated."""
    digest = hashlib.sha256(f"{salt}\0{seed}\0{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_of(sample_id: str, validation_fraction: float, seed: int = 0) -> str:
    """`validation` for about `validation_fraction` of ids, `train` for the rest."""
    if validation_fraction <= 0:
        return TRAIN
    return VALIDATION if unit_hash(sample_id, seed, "split") < validation_fraction else TRAIN
