"""SGLang's flags: aliases resolve, values are read as SGLang reads them, owned flags are refused
in extraArgs with their field."""

from __future__ import annotations

import pytest

from draftgen.contract.sglang_flags import ALIASES, SGLangFlag, canonical, owner_of, value_in


def test_aliases_and_equals_forms_resolve_to_the_flag() -> None:
    assert canonical("--tp=4") is SGLangFlag.TP_SIZE
    assert all(canonical(a) is f for a, f in ALIASES.items())
    assert owner_of("--tensor-parallel-size") == "tensorParallelSize"
    assert owner_of("--max-total-tokens") is None and canonical("--no-such-flag") is None


def test_value_in_reads_both_spellings_and_the_last_wins() -> None:
    args = ["--page-size", "16", "--enable-metrics", "--page-size=32"]
    assert value_in(args, SGLangFlag.PAGE_SIZE) == "32"
    assert value_in(["--page-size"], SGLangFlag.PAGE_SIZE) is None
    assert value_in([], SGLangFlag.MAX_TOTAL_TOKENS) is None


@pytest.mark.parametrize("flag", [f for f in SGLangFlag if f.owner])
def test_an_owned_flag_in_extra_args_names_its_field(flag: SGLangFlag) -> None:
    from draftgen.spec.server import ServerSpec

    with pytest.raises(ValueError, match=flag.owner.replace(".", r"\.")):
        ServerSpec.model_validate({"extraArgs": [f"{flag}=1"]})
