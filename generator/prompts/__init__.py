"""Prompts: a conversation rendered with the model's own chat template and tokenized, checked on the way."""
