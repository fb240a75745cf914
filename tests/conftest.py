"""Settings shared by the whole test suite."""

from __future__ import annotations

from hypothesis import settings

__all__: list[str] = []

# No per-example deadline: a loaded CI machine must not turn a slow example into a failure
# (the suite never asserts timings). Tests choose their own max_examples.
settings.register_profile("agui", deadline=None, print_blob=True)
settings.load_profile("agui")
