"""The benchmark suite, a package: each script runs from the repository's root as
``python -m benchmarks.<name>`` (``python -m benchmarks.matrix --shapes ...``), and imports the
others as ``benchmarks.<name>``. README.md lists the scripts; ``tuning/`` holds the sweeps
behind the automatic choice's constants, ``experiments/`` one-off measurements of a kernel's
floor, ``serving/`` the MLServer benchmarks, ``reports/`` one results page per machine kind.
"""
