"""The server arguments the operator renders are accepted by SGLang's own argument parser
(`ServerArgs.add_cli_args`, from the installed sglang) and mean what the spec says."""

from __future__ import annotations

import json
import subprocess
import tempfile

import pytest
import yaml

from draftgen.controller.render import render_all

from .harness import REPO

pytestmark = pytest.mark.sglang
SGLANG_PY = REPO / ".cache" / "venv-sglang" / "bin" / "python"

PARSE = """
import argparse, json, sys
from sglang.srt.server_args import ServerArgs
out = []
for args in json.loads(sys.argv[1]):
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    a = parser.parse_args(args)
    out.append({k: getattr(a, k) for k in ("model_path", "tp_size", "mem_fraction_static",
        "kv_cache_dtype", "enable_hierarchical_cache", "hicache_size", "context_length",
        "trust_remote_code", "enable_metrics", "host", "port", "max_running_requests",
        "chunked_prefill_size", "enable_mixed_chunk", "schedule_conservativeness",
        "attn_dp_size", "dcp_size", "dp_size")})
print(json.dumps(out))
"""


def _server_args(raw: dict) -> list[str]:
    objs = render_all(
        raw["metadata"]["name"], raw["metadata"].get("namespace", "default"), raw["spec"]
    )
    dep = next(o for o in objs if o["kind"] == "Deployment")
    return dep["spec"]["template"]["spec"]["containers"][0]["args"]


def test_sglang_parses_the_rendered_arguments() -> None:
    if not SGLANG_PY.exists():
        pytest.skip("the SGLang environment is missing: run `make sglang`")
    kimi = yaml.safe_load((REPO / "examples" / "kimi-k2.5.yaml").read_text())
    tuned = yaml.safe_load((REPO / "examples" / "kimi-k2.5.yaml").read_text())
    tuned["spec"]["server"].update(
        maxRunningRequests=72,
        chunkedPrefillSize=8192,
        scheduleConservativeness=0.3,
        extraArgs=["--enable-mixed-chunk"],
        attentionDataParallelSize=4,
        decodeContextParallelSize=2,
    )
    # Run outside the repository: its `operator/` directory would shadow the stdlib module.
    result = subprocess.run(
        [str(SGLANG_PY), "-c", PARSE, json.dumps([_server_args(kimi), _server_args(tuned)])],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    parsed_kimi, parsed_tuned = json.loads(result.stdout.strip().splitlines()[-1])
    assert parsed_kimi == {
        "model_path": "/models/Kimi-K2.5",
        "tp_size": 8,
        "mem_fraction_static": 0.88,
        "kv_cache_dtype": "bf16",
        "enable_hierarchical_cache": True,
        "hicache_size": 48,
        "context_length": 65536,
        "trust_remote_code": True,
        "enable_metrics": True,
        "host": "0.0.0.0",
        "port": 30000,
        "max_running_requests": None,
        "chunked_prefill_size": None,
        "enable_mixed_chunk": False,
        # Unset with auto concurrency: draftgen's admission guards the pool, SGLang keeps
        # back little (0.5 with fixed concurrency: tests/spec/test_conservativeness.py).
        "schedule_conservativeness": 0.1,
        # Plain tensor parallelism: SGLang's defaults, no flag rendered.
        "attn_dp_size": 1,
        "dcp_size": 1,
        "dp_size": 1,
    }
    assert parsed_tuned["max_running_requests"] == 72
    assert parsed_tuned["chunked_prefill_size"] == 8192
    assert parsed_tuned["enable_mixed_chunk"] is True
    assert parsed_tuned["schedule_conservativeness"] == 0.3
    # Data-parallel attention in 0.5.23's own spelling: not plain DP replicas (`dp_size`).
    assert (parsed_tuned["attn_dp_size"], parsed_tuned["dcp_size"]) == (4, 2)
    assert parsed_tuned["dp_size"] == 1
