"""verify's fact checks: the timeline, sessions, evidence, settings, clocks, scored commits."""
