"""The vendored option table (draftgen/contract/sglang_options.py) is SGLang's real parser, and the
real parser reads the spellings draftgen refuses as the flags draftgen says. Needs the SGLang
environment (`make sglang`); skipped without it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from draftgen.contract.sglang_flags import SGLangFlag, canonical
from draftgen.contract.sglang_options import OPTIONS, SGLANG_VERSION
from draftgen.testing.sglang import sglang_python

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "sglang_options.py"

# For each spelling: the setting (argparse dest) the real parser resolves it to, or its error.
_PARSE = """
import argparse, json, sys
from sglang.srt.server_args import ServerArgs
parser = argparse.ArgumentParser(prog="sglang serve")
ServerArgs.add_cli_args(parser)
out = {}
for arg in json.loads(sys.argv[1]):
    try:
        found = parser._parse_optional(arg)
    except SystemExit:
        out[arg] = "error"
        continue
    if isinstance(found, list):  # Python 3.12+ returns every match
        found = found[0]
    out[arg] = found[0].dest if found and found[0] is not None else None
print(json.dumps(out))
"""


def _python() -> Path:
    python = sglang_python()
    if not python.exists():
        pytest.skip(f"{python} is missing: run `make sglang`")
    return python


def test_every_flag_draftgen_names_is_in_the_table() -> None:
    assert all(f.value in OPTIONS for f in SGLangFlag)


def test_the_vendored_table_is_the_installed_sglangs() -> None:
    out = subprocess.run(
        [str(_python()), str(SCRIPT), "--json"], capture_output=True, text=True, check=True
    )
    installed = json.loads(out.stdout)
    if installed["version"] != SGLANG_VERSION:
        pytest.skip(f"installed SGLang {installed['version']}, table of {SGLANG_VERSION}")
    assert installed["options"] == OPTIONS, "regenerate: see scripts/sglang_options.py"


def test_the_real_parser_reads_prefixes_and_aliases_as_draftgen_does() -> None:
    from tests.spec.test_extra_args_bypass import OWNED, spellings

    args = [arg for f in OWNED for arg in spellings(f).values()] + ["--kv", "--hos", "--tp"]
    out = subprocess.run(
        [str(_python()), "-c", _PARSE, json.dumps(args)],
        capture_output=True,
        text=True,
        check=True,
    )
    parsed = json.loads(out.stdout)
    for arg in args:
        flag = canonical(arg)
        expected = flag.dest if flag is not None else ("host" if arg == "--hos" else "error")
        assert parsed[arg] == expected, (arg, parsed[arg])
