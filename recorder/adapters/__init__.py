"""Adapters between the event log and the world outside it: the mllog drop-in (`mllog`), the TRL callback
(`trl`), the NeMo-RL checkpoint import (`nemo`) and the mllog file importer (`mllog_import`)."""
