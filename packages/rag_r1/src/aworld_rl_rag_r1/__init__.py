"""aworld-rl package for RAG-R1: multi-query deep search trained with RL over a real retriever."""

__version__ = "0.1.0"
