"""aworld-rl package for <paper title>."""

__version__ = "0.1.0"
