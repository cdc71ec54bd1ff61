"""FunReason-MT / HardGen: hard multi-turn tool-use trajectories synthesized on BFCL's APIs."""

__version__ = "0.1.0"
