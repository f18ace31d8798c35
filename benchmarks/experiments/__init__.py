"""One-off measurements of a kernel's floor, in C beside the model's own layout where it helps
(``python -m benchmarks.experiments.<name>``)."""
