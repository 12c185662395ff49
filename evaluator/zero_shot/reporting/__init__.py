"""What a zero-shot result shows and where it goes: results files, collect, shown scores."""
