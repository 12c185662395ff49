"""What a path is and how it was trained: targets, team runs, configs, declarations."""
