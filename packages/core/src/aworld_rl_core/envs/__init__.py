"""Environments shipped with core (toy tasks for end-to-end checks)."""
