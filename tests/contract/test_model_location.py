"""Model locations: one parser for `hf://` and local paths."""

from __future__ import annotations

import pytest

from draftgen.contract.model_location import (
    HubModel,
    LocalModel,
    ModelLocationError,
    loader_name,
    parse,
)


def test_hub_ids_with_and_without_a_revision() -> None:
    assert parse("hf://moonshotai/Kimi-K2.5") == HubModel("moonshotai/Kimi-K2.5")
    assert parse("hf://org/name/") == HubModel("org/name")
    assert parse("hf://org/name@v1.0") == HubModel("org/name", "v1.0")
    assert loader_name("hf://org/name") == "org/name"


def test_anything_else_is_a_path_without_the_file_scheme() -> None:
    assert parse("/models/kimi") == LocalModel("/models/kimi")
    assert parse("file:///models/kimi") == LocalModel("/models/kimi")
    assert parse("models/tiny").is_absolute is False
    assert loader_name("file://models/tiny") == "models/tiny"


@pytest.mark.parametrize("bad", ["hf://name", "hf://", "hf://org/", "hf://a/b/c", "hf://org/name@"])
def test_a_malformed_hub_id_says_how_to_write_one(bad: str) -> None:
    with pytest.raises(ModelLocationError, match="hf://ORG/NAME"):
        parse(bad)


def test_the_spec_refuses_a_revision_it_would_not_pass_on() -> None:
    from draftgen.spec.model import ModelSpec

    with pytest.raises(ValueError, match="revision"):
        ModelSpec.model_validate({"weights": "hf://org/name@main"})
    with pytest.raises(ValueError, match="hf://ORG/NAME"):
        ModelSpec.model_validate({"weights": "hf://name"})
    assert ModelSpec.model_validate({"weights": "hf://org/name"}).weights == "hf://org/name"


def test_a_cards_model_name_is_never_a_local_path() -> None:
    from draftgen.contract.model_location import model_name

    assert model_name("hf://moonshotai/Kimi-K2.5@main") == "moonshotai/Kimi-K2.5"
    assert model_name("/models/kimi-k2.5/") == "kimi-k2.5"
    assert model_name("file://models/tiny") == "tiny"
    cached = "/root/.cache/huggingface/hub/models--moonshotai--Kimi-K2.5/snapshots/0123abc"
    assert model_name(cached) == "moonshotai/Kimi-K2.5"


def test_the_cards_base_model_is_the_name_not_the_path() -> None:
    import yaml

    from draftgen.export.card import yaml_header

    header = yaml.safe_load(yaml_header({"train": "train.jsonl"}, "/models/kimi-k2.5").strip("-\n"))
    assert header["base_model"] == "kimi-k2.5"
    hub = yaml.safe_load(yaml_header({"train": "t"}, "hf://moonshotai/Kimi-K2.5").strip("-\n"))
    assert hub["base_model"] == "moonshotai/Kimi-K2.5"
