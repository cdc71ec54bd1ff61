"""Core's recipes."""
