"""The agui-core test suite; a package so that shared test code imports as ``tests.strategies``."""
