"""Checkpoint formats in one place: the formats table, layouts, manifests, readers and the model code they load into."""
