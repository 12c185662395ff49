"""`recorder report`: one self-contained HTML page per set of runs (page), from the history's views and
the files replay derives (facts), in words (story) and charts (charts, sets)."""
