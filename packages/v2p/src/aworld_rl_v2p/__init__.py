"""aworld-rl package for V2P: valley-to-peak GUI grounding (arXiv 2508.13634)."""

__version__ = "0.1.0"
