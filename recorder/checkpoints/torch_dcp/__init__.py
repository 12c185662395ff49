"""torch DCP on disk: the FSDP2 layout, `.metadata` listings, chunk cover, writing."""
