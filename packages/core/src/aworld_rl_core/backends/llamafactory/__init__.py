"""The LLaMA-Factory backend: SFT with our datasets and token losses."""
