"""The sweeps behind the automatic choice's constants (``python -m benchmarks.tuning.<name>``);
``_variants`` holds what they share."""
