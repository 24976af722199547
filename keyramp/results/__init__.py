"""What a run leaves: the run directory writer, the catalog over past runs, baselines."""
