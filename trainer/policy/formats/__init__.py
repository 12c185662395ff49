"""Checkpoint formats: what a directory holds (detect), its weights as a state dict with a manifest of the
bytes read (load), and the model to put them in, from transformers or the team's own code (model_code)."""
