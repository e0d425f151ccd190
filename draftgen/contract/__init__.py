"""Contracts shared by the generator and the operator: one definition each, imported by both sides."""
