"""A local chat receiver for `make run`: prints each message a generic-webhook channel posts, with
whether its X-LabGPU-Signature checks out, so the demo's notifications show in the console."""

import hashlib
import hmac
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from django.core.management.base import BaseCommand

MAX_BODY = 64 * 1024


def signature_ok(header: str, body: bytes, secret: str) -> bool:
    try:
        parts = dict(part.split("=", 1) for part in header.split(","))
        expected = hmac.new(
            secret.encode(), parts["t"].encode() + b"." + body, hashlib.sha256
        ).hexdigest()
        return hmac.compare_digest(parts["v1"], expected)
    except (KeyError, ValueError):
        return False


class Command(BaseCommand):
    help = "Serve a local chat sink that prints every message it receives (make run's demo)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8026)
        parser.add_argument("--secret", default="", help="Check X-LabGPU-Signature with it.")

    def handle(self, *args: Any, **options: Any) -> None:
        def write(line: str) -> None:
            self.stdout.write(line)
            self.stdout.flush()  # honcho reads a pipe: show each message as it comes

        secret = options["secret"]

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = min(int(self.headers.get("Content-Length", "0") or 0), MAX_BODY)
                body = self.rfile.read(length)
                signed = self.headers.get("X-LabGPU-Signature", "")
                check = (
                    "signature ok"
                    if secret and signature_ok(signed, body, secret)
                    else "SIGNATURE BAD"
                    if secret
                    else "unchecked"
                )
                try:
                    message = json.loads(body)
                    text = f"{message.get('title', '')}\n    {message.get('text', '')}"
                    event = message.get("event", "?")
                except ValueError:
                    event, text = "?", body[:500].decode(errors="replace")
                write(f"[chat sink] {event} ({check}): {text.replace(chr(10), chr(10) + '    ')}")
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer((options["host"], options["port"]), Handler)
        write(f"chat sink on http://{options['host']}:{options['port']}/ (prints what it receives)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
