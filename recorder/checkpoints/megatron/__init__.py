"""Megatron-Core `torch_dist` saves as NeMo-RL writes them, and their names."""
