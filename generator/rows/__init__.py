"""Rows: reading dataset sources and turning each row into one normalized conversation."""
