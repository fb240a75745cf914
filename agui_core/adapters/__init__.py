"""Framework adapters: a framework's agent as an agui-core agent (each module imports its framework lazily)."""
