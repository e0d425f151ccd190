"""The generator: pre-tokenize, call SGLang /generate with input_ids, write records, resume."""
