"""Errors that the CLI reports as one line (the traceback only with ``--debug``)."""


class AworldError(Exception):
    """Base of the errors a user can fix: the message says what is wrong and what to do."""


class ConfigError(AworldError, ValueError):
    """A preset, config file or ``key=value`` override is invalid."""


class PluginError(AworldError):
    """A plugin failed to load, or two plugins registered the same name."""
