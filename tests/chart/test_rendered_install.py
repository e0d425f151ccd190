"""docs/rendered-install.md is what the chart renders for the Kimi-K2.5 example today."""

from __future__ import annotations

import importlib.util

from .rendering import REPO, validate


def _script():
    spec = importlib.util.spec_from_file_location(
        "render_install", REPO / "scripts" / "render_install.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rendered_install_doc_is_current():
    script = _script()
    assert script.main(["--check"]) == 0, (
        "docs/rendered-install.md is stale: run scripts/render_install.py"
    )


def test_kimi_install_is_valid_and_declares_the_example_job(examples):
    import yaml

    from .rendering import render

    script = _script()
    docs = render(script.kimi_values(), name=script.RELEASE, namespace=script.NAMESPACE)
    for doc in docs:
        validate(doc)
    job = next(d for d in docs if d["kind"] == "GenerationJob")
    example = yaml.safe_load((examples / "kimi-k2.5.yaml").read_text())
    assert job["spec"] == example["spec"]
    assert job["metadata"]["namespace"] == example["metadata"]["namespace"]
