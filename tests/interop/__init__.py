"""Interoperability tests against the reference packages: ``ag_ui`` and ``@ag-ui/*``."""
