"""Evaluation across processes and machines: Ray start, workers, the sweep."""
