"""The approval console's files: ``GET /console/`` serves the page shipped in the package.

The page is static (HTML, a module script, a style sheet) and talks to the read routes and the
run endpoint of the host that served it; the headers below let it do nothing else. Its files
are read once, when the application is made.
"""

from __future__ import annotations

from importlib import resources
from typing import Final

from agui_transports.http_asgi import Refused, Scope, Send

__all__ = ["CONSOLE", "ConsoleFiles"]

CONSOLE: Final = "/console/"
"""Where the console lives, below where the application is mounted."""
_TYPES: Final = {
    ".html": b"text/html; charset=utf-8",
    ".mjs": b"text/javascript; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
}
_HEADERS: Final = [
    # The page loads its own files and calls its own host; nothing else, nothing inline.
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self';"
        b" base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-cache"),
]


class ConsoleFiles:
    """The console's files shipped in the package, by name, with their content types."""

    def __init__(self) -> None:
        folder = resources.files("agui_transports") / "console"
        self._files: dict[str, tuple[bytes, bytes]] = {}
        for item in folder.iterdir():
            suffix = item.name[item.name.rfind(".") :]
            if item.is_file() and suffix in _TYPES:
                self._files[item.name] = (item.read_bytes(), _TYPES[suffix])

    @staticmethod
    def serves(path: str) -> bool:
        """Whether ``path`` (below the mount point) is the console's."""
        return path == "/console" or path.startswith(CONSOLE)

    async def __call__(self, scope: Scope, path: str, send: Send) -> None:
        if path == "/console":  # the page's relative addresses need the trailing slash
            location = (scope.get("root_path", "") + CONSOLE).encode("latin-1")
            await send({"type": "http.response.start", "status": 308, "headers": [(b"location", location)]})
            await send({"type": "http.response.body", "body": b""})
            return
        name = path[len(CONSOLE) :] or "index.html"
        found = self._files.get(name)
        if found is None:
            raise Refused(404, "not_found", f"the console has no file {name!r}")
        body, content_type = found
        start = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *_HEADERS]
        await send({"type": "http.response.start", "status": 200, "headers": start})
        await send({"type": "http.response.body", "body": body})
