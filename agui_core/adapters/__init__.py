"""Framework adapters: a framework's agent hosted as an agui-core agent (each module imports its framework lazily)."""
