"""The history of all runs: DuckDB views (`views`), compaction into Parquet (`compact`), the cache check
(`cache`) and plots (`plot`). It reads events and the derived files replay writes; it computes no score."""
