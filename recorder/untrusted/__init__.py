"""Reading what someone else made: regular files only, bounded, trees walked without links."""
