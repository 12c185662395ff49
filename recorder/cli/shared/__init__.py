"""What several commands share: options, paths, signing keys, launching, Ctrl-C lines."""
