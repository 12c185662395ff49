"""Data-parallel training under torchrun."""
