"""The trainer's own checkpoints: writing (whole or sharded), the snapshot buffer."""
