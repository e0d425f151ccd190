"""The root of draftgen's errors.

DraftgenError            exit_code, fix
 └── RunError            a `draftgen generate` run cannot go on
"""

from __future__ import annotations

from draftgen.contract.generator_cli import ExitCode


class DraftgenError(Exception):
    """An error draftgen expects and explains: the command exits with `exit_code`."""

    exit_code: int = ExitCode.UNEXPECTED


class RunError(DraftgenError):
    """The run cannot go on; `exit_code` tells the caller why (see `draftgen generate -h`)."""
