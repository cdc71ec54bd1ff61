"""FunReason / BalanceSFT: balanced SFT for function calling with chain-of-thought.

Pure pieces: :mod:`.loss` (SRML), :mod:`.data` (readers and target rendering), :mod:`.fcdr`
(five-stage refinement), :mod:`.bfcl_eval` (single-turn scoring and aggregation).
"""

__version__ = "0.1.0"
