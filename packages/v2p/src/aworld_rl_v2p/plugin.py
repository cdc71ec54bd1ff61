"""V2P's registrations (lazy targets; importing this module imports nothing heavy)."""

from aworld_rl_core import hookimpl
