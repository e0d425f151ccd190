"""draftgen: drafter training data generated token for token from an SGLang-served model.

A regular package (not a namespace one), so `draftgen` resolves to this one folder: the layer
contracts of pyproject.toml (import-linter) and every import read exactly this tree."""
