"""Builders the tests and the benches share: runs, checkpoint series and task data made from scratch.

They are test kit, not product: an installed wheel holds none of them."""
