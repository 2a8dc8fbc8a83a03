"""A TCP proxy between the node agents and the API that loses answers (issue 29, item 1).

Each request is forwarded whole to the API and the API's whole answer is read back; for the first
request of each kind named in `drop_first` (the path's last segment: bootstrap, reports,
heartbeat) the client's connection is then closed without a byte of that answer — the request
reached the server and did its work, and the answer was lost, as when a client times out on a
queued request or a connection breaks on the way back. One request per connection
(`Connection: close` both ways) keeps the framing simple.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from labgpu.provisioning.tests.harness import free_port


@dataclass
class Forwarded:
    kind: str
    status: int
    dropped: bool
    at: float  # time.time() when the API's answer was in


@dataclass
class AnswerDroppingProxy:
    upstream_url: str
    drop_first: set[str] = field(default_factory=set)
    port: int = field(default_factory=free_port)
    log: list[Forwarded] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> AnswerDroppingProxy:
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.close()

    def of_kind(self, kind: str) -> list[Forwarded]:
        with self._lock:
            return [entry for entry in self.log if entry.kind == kind]

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            request = _read_message(client)
            if request is None:
                return
            head, _ = request
            path = head.split(b" ", 2)[1].decode()
            kind = path.rstrip("/").rsplit("/", 1)[-1]
            upstream = urlsplit(self.upstream_url)
            with socket.create_connection((upstream.hostname, upstream.port)) as server:
                server.sendall(_closing(request))
                answer = _read_to_end(server)
            status = int(answer.split(b" ", 2)[1])
            with self._lock:
                drop = kind in self.drop_first
                self.drop_first.discard(kind)
                self.log.append(Forwarded(kind, status, drop, time.time()))
            if drop:
                # RST rather than FIN: the agent sees a broken connection, no answer at all.
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                return
            head, _, body = answer.partition(b"\r\n\r\n")
            client.sendall(_closing((head, body)))


def _read_message(sock: socket.socket) -> tuple[bytes, bytes] | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head, body


def _read_to_end(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _closing(message: tuple[bytes, bytes]) -> bytes:
    """The message with `Connection: close` in place of whatever it said."""
    head, body = message
    lines = [
        line
        for line in head.split(b"\r\n")
        if line.split(b":", 1)[0].strip().lower() not in (b"connection", b"keep-alive")
    ]
    return b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n" + body
