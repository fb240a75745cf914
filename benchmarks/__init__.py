"""agui-core's benchmarks: our code against the reference Python SDK, side by side.

Run ``python -m benchmarks`` (``--quick`` for a few-second smoke run, ``--only NAME`` for one
scenario, ``--out PATH`` for where the JSON goes). :mod:`benchmarks.harness` does the timing
and reporting; :mod:`benchmarks.scenarios` holds the registry of scenarios.
"""

__all__: list[str] = []
