"""The application layer: the ``agui`` command line and the demo.

It sits above both the library (:mod:`agui_core` without this package) and the transports
(:mod:`agui_transports`), so imports run one way: nothing else in ``agui_core`` imports
``agui_transports``, and nothing in either imports the benchmarks.
"""

__all__ = ()
