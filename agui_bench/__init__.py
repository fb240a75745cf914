"""agui-core's benchmarks: our code against the reference Python SDK, side by side.

Run ``python -m agui_bench`` (``--quick`` for a few-second smoke run, ``--only NAME`` for one
scenario, ``--out PATH`` for where the JSON goes). :mod:`agui_bench.harness` does the timing
and reporting; :mod:`agui_bench.scenarios` holds the registry of scenarios.
"""

__all__: list[str] = []
