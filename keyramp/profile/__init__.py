"""What a run is asked to do: profiles (validated, expanded into cells), schedules,
durations, lint rules and thresholds."""
