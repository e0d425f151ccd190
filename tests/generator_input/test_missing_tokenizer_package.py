"""A tokenizer whose own code imports a package that is not installed: the error names the
package and the fix (pip install, or the image that has it), not "no loadable tokenizer", and
`draftgen validate --tokenizer` shows it before any server starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from draftgen.generator.prompts.pretokenize import TokenizerError, load_tokenizer
from draftgen.generator.prompts.tokenizer_imports import missing_package_message, missing_packages

MISSING = "draftgen_test_missing_tokenizer_dep"


@pytest.fixture
def broken_tokenizer(tmp_path: Path) -> Path:
    """A remote-code tokenizer directory whose tokenization_*.py imports a missing package."""
    d = tmp_path / "broken-tokenizer"
    d.mkdir()
    (d / "tokenization_broken.py").write_text(
        f"import {MISSING}\nfrom transformers import PreTrainedTokenizer\n\n\n"
        "class BrokenTokenizer(PreTrainedTokenizer):\n    pass\n"
    )
    (d / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "BrokenTokenizer",
                "auto_map": {"AutoTokenizer": ["tokenization_broken.BrokenTokenizer", None]},
            }
        )
    )
    return d


def test_the_error_names_the_package_and_the_fix(broken_tokenizer):
    with pytest.raises(TokenizerError) as err:
        load_tokenizer(str(broken_tokenizer), trust_remote_code=True)
    text = str(err.value)
    assert f"needs the Python package {MISSING}" in text
    assert f"pip install {MISSING}" in text
    assert "no loadable tokenizer" not in text and "set model.trustRemoteCode" not in text


@pytest.mark.parametrize(
    "err, packages",
    [
        (ModuleNotFoundError("No module named 'tiktoken'", name="tiktoken"), ["tiktoken"]),
        (
            ModuleNotFoundError("No module named 'google.protobuf'", name="google.protobuf"),
            ["protobuf"],
        ),
        (
            ImportError(
                "This modeling file requires the following packages that were not found in "
                "your environment: tiktoken, blobfile. Run `pip install tiktoken blobfile`"
            ),
            ["tiktoken", "blobfile"],
        ),
        (
            ImportError(
                "LlamaTokenizer requires the SentencePiece library but it was not found in "
                "your environment."
            ),
            ["sentencepiece"],
        ),
        (OSError("Can't load tokenizer"), []),
    ],
)
def test_missing_packages(err, packages):
    assert missing_packages(err) == packages


def test_a_package_the_image_has_points_at_the_image():
    from importlib.metadata import version

    text = missing_package_message(
        ModuleNotFoundError("x", name="tiktoken"), "/m", "model.tokenizer"
    )
    assert "pip install tiktoken" in text
    assert f"ghcr.io/draftgen/draftgen:{version('draftgen')}, which has it" in text


def _job(tmp_path: Path, tokenizer: Path) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "draftgen.io/v1alpha1",
                "kind": "GenerationJob",
                "metadata": {"name": "t"},
                "spec": {
                    "model": {"weights": str(tokenizer), "trustRemoteCode": True},
                    "server": {"tensorParallelSize": 1},
                    "datasets": [{"name": "a", "source": "a.jsonl", "format": "messages"}],
                },
            }
        )
    )
    return path


def _validate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "draftgen.cli", "validate", "--local", "--spec-only", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_validate_tokenizer_shows_it_before_any_server_starts(tmp_path, broken_tokenizer):
    job = _job(tmp_path, broken_tokenizer)
    assert _validate(str(job)).returncode == 0  # the spec alone is fine
    run = _validate("--tokenizer", str(job))
    assert run.returncode == 2  # ExitCode.INVALID, as `draftgen generate` would exit
    assert f"pip install {MISSING}" in run.stderr


def test_validate_tokenizer_loads_a_remote_code_tokenizer(tmp_path, tiny_kimi_tiktoken):
    run = _validate("--tokenizer", str(_job(tmp_path, tiny_kimi_tiktoken)))
    assert run.returncode == 0, run.stderr
    assert "tokenizer TinyKimiTokenizer loads: 163840 ids" in run.stdout
