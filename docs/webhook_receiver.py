"""A receiver of agui-core's webhooks, with the standard library only.

    python docs/webhook_receiver.py --port 8780 --secret-file webhook.secret

It checks each notice's signature and timestamp, acknowledges a notice it has already seen
without acting on it again, and prints each new one as a line of JSON on standard output. Put
your own action (an email, a chat message, a ticket) where it prints.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

TOLERANCE = 300  # seconds a notice's timestamp may be from this machine's clock


def make_handler(secret: bytes, seen: dict[str, float]) -> type[BaseHTTPRequestHandler]:
    """``seen``: the ids of the notices acted on, with when, kept as long as a replay could pass."""
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            stamp = self.headers.get("x-agui-timestamp", "")
            expected = "sha256=" + hmac.new(secret, stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
            signed = hmac.compare_digest(expected, self.headers.get("x-agui-signature", ""))
            if not signed or not stamp.isdigit() or abs(time.time() - int(stamp)) > TOLERANCE:
                self.send_response(401)  # forged, or replayed long after it was sent
                self.end_headers()
                return
            notice = json.loads(body)
            key = str(notice.get("id", ""))  # the signed id, not a header anyone could change
            now = time.time()
            with lock:  # a notice sent again (its first answer was lost) is acted on once
                for old in [k for k, at in seen.items() if now - at > 3 * TOLERANCE]:
                    del seen[old]  # older than any timestamp this receiver still takes
                new = key not in seen
                seen[key] = seen.get(key, now)
            if new:
                print(json.dumps(notice), flush=True)
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass  # standard output carries the notices only

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8780)
    parser.add_argument("--secret-file", required=True)
    args = parser.parse_args()
    secret = Path(args.secret_file).read_bytes().strip()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(secret, {}))
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
