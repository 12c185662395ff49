"""Task specs shipped with the package (TOML, with their JSONL data)."""
