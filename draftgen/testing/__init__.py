"""Helpers for testing draftgen against real servers and emulators (like kopf.testing)."""
