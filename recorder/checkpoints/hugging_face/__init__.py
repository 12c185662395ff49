"""Hugging Face safetensors: headers, the hub's layout, export."""
