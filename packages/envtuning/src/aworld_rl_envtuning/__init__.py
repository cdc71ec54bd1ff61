"""Environment Tuning (arXiv 2510.10197) on aworld-rl's core: augmented BFCL multi-turn
environment, progress rewards, the four-stage curriculum and multi-turn evaluation."""

__version__ = "0.1.0"
