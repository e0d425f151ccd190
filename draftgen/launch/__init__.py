"""How an SGLang server is launched for a spec: its command line, and where its model is once the
download Job has put `hf://` weights on the models volume. Pure; the operator renders pods from it
and `draftgen serve` runs it."""
