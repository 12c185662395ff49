"""The event store: events, segments, the log writer and reader, runs, the catalogue and payloads."""
