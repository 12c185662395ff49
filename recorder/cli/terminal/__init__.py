"""What the commands print: one console, tables, progress, help, JSON, quiet libraries."""
