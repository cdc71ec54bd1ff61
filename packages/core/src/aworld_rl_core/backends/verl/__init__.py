"""The verl backend: multi-GPU, multi-node RL on Ray."""
