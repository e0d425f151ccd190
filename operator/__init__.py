"""The kopf operator (installed as draftgen.controller; `operator` would shadow the stdlib)."""
