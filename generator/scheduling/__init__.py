"""Scheduling: which dataset's sample goes next, to which server, within its token budget."""
