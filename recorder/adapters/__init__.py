"""Adapters between the event log and the world outside it: the mllog drop-in (`mllog`), the TRL callback
(`trl`), the checkpoint-series imports (`series`, shared by NeMo-RL's `nemo` and an FSDP2 job's torch DCP
`dcp`) and the mllog file importer (`mllog_import`)."""
