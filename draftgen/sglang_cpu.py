"""How SGLang runs on a CPU-only machine (shared/notes/sglang.md): its flags, its environment, and
where the project keeps the SGLang environment and caches. `draftgen serve --cpu`, the demo, the
tests and the benchmarks start it this way (draftgen.testing.sglang adds the process handling)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from draftgen.contract.sglang_flags import SGLangFlag as F

# CPU flags (see shared/notes/sglang.md): plain-torch attention and sampling, no CUDA graphs,
# metrics on, and an idle scheduler that sleeps instead of spinning a core.
CPU_FLAGS = (
    F.DEVICE.value,
    "cpu",
    F.ATTENTION_BACKEND.value,
    "torch_native",
    F.SAMPLING_BACKEND.value,
    "pytorch",
    f"{F.CUDA_GRAPH_BACKEND_DECODE.value}=disabled",
    f"{F.CUDA_GRAPH_BACKEND_PREFILL.value}=disabled",
    F.ENABLE_METRICS.value,
    F.SLEEP_ON_IDLE.value,
)


def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


def cache_dir() -> Path:
    """``$DRAFTGEN_CACHE``; else the ``.cache`` of the checkout the command runs in (the current
    directory or a parent with a ``pyproject.toml`` and a ``.cache``): a second clone using a
    draftgen installed from the first finds its own; else ``<repo>/.cache`` beside this source."""
    env = os.environ.get("DRAFTGEN_CACHE")
    if env:
        return Path(env).resolve()
    here = Path.cwd().resolve()
    for directory in (here, *here.parents):
        if (directory / "pyproject.toml").is_file() and (directory / ".cache").is_dir():
            return directory / ".cache"
    return repo_root() / ".cache"


def sglang_python() -> Path:
    """The interpreter of the SGLang venv (``$DRAFTGEN_SGLANG_PYTHON`` overrides)."""
    env = os.environ.get("DRAFTGEN_SGLANG_PYTHON")
    return Path(env) if env else cache_dir() / "venv-sglang" / "bin" / "python"


def cpu_environment(base: Mapping[str, str]) -> dict[str, str]:
    """`base` with what SGLang needs to run on the CPU here (shared/notes/sglang.md)."""
    cache = cache_dir()
    env = dict(base)
    env.update(
        {
            "SGLANG_USE_CPU_ENGINE": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HOME": str(cache / "hf"),
            "XDG_CACHE_HOME": str(cache / "xdg"),
            "TRITON_CACHE_DIR": str(cache / "triton"),
            "TORCHINDUCTOR_CACHE_DIR": str(cache / "torchinductor"),
            "OUTLINES_CACHE_DIR": str(cache / "outlines"),
            # the repo root has packages named like stdlib modules (operator/)
            "PYTHONSAFEPATH": "1",
            "PYTHONUNBUFFERED": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
    )
    for var in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        env.pop(var, None)
    # One intra-op thread unless the caller says otherwise: on a busy 2-core machine (tests,
    # the client and the server side by side) two OpenMP threads made decoding 2-3x slower.
    env.setdefault("OMP_NUM_THREADS", os.environ.get("DRAFTGEN_SGLANG_THREADS", "1"))
    return env
