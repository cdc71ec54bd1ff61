"""aworld-rl core: plugins, recipes, configs, the tool-use runtime and training backends."""

from aworld_rl_core.hookspecs import hookimpl

__version__ = "0.1.0"
__all__ = ["__version__", "hookimpl"]
