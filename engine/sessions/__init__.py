"""Sessions over stored runs: setting a run up, resuming, forking and verifying it."""
