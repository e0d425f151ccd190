"""`python -m sglang.bench_serving`, unchanged, for the SGLang environment this project installs.

SGLang's benchmark imports the optional `datasets` package at start-up (for its MMMU dataset
only), and `.cache/venv-sglang` does not install it. This runs SGLang's own module with that one
import stubbed: the `custom` dataset and every code path used here are SGLang's.

    .cache/venv-sglang/bin/python bench/sglang_bench_serving.py <bench_serving arguments>
"""

import runpy
import sys
import types

try:
    import datasets  # noqa: F401
except ImportError:
    stub = types.ModuleType("datasets")

    def load_dataset(*_args, **_kwargs):
        raise RuntimeError("the `datasets` package is not installed in this environment")

    stub.load_dataset = load_dataset
    sys.modules["datasets"] = stub

sys.argv[0] = "sglang.bench_serving"
runpy.run_module("sglang.bench_serving", run_name="__main__", alter_sys=True)
