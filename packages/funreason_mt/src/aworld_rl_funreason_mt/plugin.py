"""FunReason-MT's registrations (lazy targets; importing this module imports nothing heavy)."""

from aworld_rl_core import hookimpl  # noqa: F401  (registrations follow with the recipes)
