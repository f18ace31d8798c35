"""The MLServer benchmarks (``python -m benchmarks.serving.load``); ``floor_runtime`` and
``timed_runtime`` are copied into a model folder, where MLServer imports them on their own."""
