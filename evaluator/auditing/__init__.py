"""`recorder audit`: re-evaluating the deciding checkpoints and comparing."""
