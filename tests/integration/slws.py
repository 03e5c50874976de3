"""slws.py - a small WebSocket client (RFC 6455) for the attach tests,
standard library only. It speaks the attach protocol of
docs/api-contract.md ("Interactive sessions"): binary messages whose first
byte is a channel (0 stdin, 1 output, 3 status, 4 resize).

    ws = Attach.open(d.port, jid, d.token)     # None-safe: ws.status, ws.body
    ws = Attach.open(d.port, jid, d.token, ctx=d.ssl_context())   # over TLS
    ws.send_stdin(b"echo hi; exit 3\\n")
    out, status = ws.read_until_status(timeout=20)
"""

import base64
import hashlib
import json
import os
import socket
import struct
import time

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PROTOCOL = "v1.attach.sluice"


class Attach:
    def __init__(self, sock, status, headers, body, rest=b""):
        self.sock = sock
        self.status = status          # the handshake's HTTP status
        self.headers = headers        # lower-case names
        self.body = body              # bytes of a refusal
        self.buf = rest
        self.closed = None            # (code, reason) of the server's close

    @classmethod
    def open(cls, port, jid, token, protocol=PROTOCOL, key=None, extra=None,
             version="13", timeout=10, ctx=None, first=b""):
        """ctx: an ssl.SSLContext, to speak over TLS. first: bytes sent in
        the same write as the request (frames the server reads with it)."""
        key = key or base64.b64encode(os.urandom(16)).decode()
        lines = ["GET /v1/jobs/%d/attach HTTP/1.1" % jid, "Host: 127.0.0.1",
                 "Upgrade: websocket", "Connection: Upgrade",
                 "Sec-WebSocket-Key: " + key, "Sec-WebSocket-Version: " + version]
        if protocol:
            lines.append("Sec-WebSocket-Protocol: " + protocol)
        if token:
            lines.append("Authorization: Bearer " + token)
        lines += extra or []
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        if ctx is not None:
            # a close without close_notify is an error (SSLEOFError), not EOF
            s = ctx.wrap_socket(s, server_hostname="127.0.0.1", suppress_ragged_eofs=False)
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + first)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        hl = head.decode("latin-1").split("\r\n")
        status = int(hl[0].split()[1]) if hl and len(hl[0].split()) > 1 else 0
        headers = {}
        for line in hl[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        body = b""
        if status != 101:
            n = int(headers.get("content-length", "0"))
            body = rest
            while len(body) < n:
                chunk = s.recv(4096)
                if not chunk:
                    break
                body += chunk
            s.close()
            return cls(None, status, headers, body)
        want = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
        if headers.get("sec-websocket-accept") != want:
            s.close()
            return cls(None, -1, headers, b"bad Sec-WebSocket-Accept")
        return cls(s, status, headers, b"", rest)

    def error(self):
        try:
            return json.loads(self.body.decode())["error"]
        except (ValueError, KeyError, UnicodeDecodeError):
            return {}

    # --- frames ------------------------------------------------------------

    @staticmethod
    def frame(opcode, payload, fin=True):
        """A masked client frame, as bytes."""
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([(0x80 if fin else 0) | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n <= 0xFFFF:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        return head + mask + body

    def send_frame(self, opcode, payload, fin=True):
        self.sock.sendall(self.frame(opcode, payload, fin))

    def send_stdin(self, data):
        self.send_frame(2, b"\x00" + data)

    def send_resize(self, width, height):
        self.send_frame(2, b"\x04" + json.dumps({"Width": width, "Height": height}).encode())

    def close(self, code=1000):
        try:
            self.send_frame(8, struct.pack(">H", code))
        except OSError:
            pass
        self.sock.close()

    def _need(self, n, deadline):
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk

    def recv_frame(self, timeout=10.0):
        """(opcode, payload); a ping is answered. EOFError at the end."""
        deadline = time.monotonic() + timeout
        while True:
            self._need(2, deadline)
            b0, b1 = self.buf[0], self.buf[1]
            if b1 & 0x80:
                raise AssertionError("a masked server frame")
            n, off = b1 & 0x7F, 2
            if n == 126:
                self._need(4, deadline)
                n, off = struct.unpack(">H", self.buf[2:4])[0], 4
            elif n == 127:
                self._need(10, deadline)
                n, off = struct.unpack(">Q", self.buf[2:10])[0], 10
            self._need(off + n, deadline)
            payload, self.buf = self.buf[off:off + n], self.buf[off + n:]
            op = b0 & 0x0F
            if op == 9:
                self.send_frame(10, payload)
                continue
            if op == 8:
                code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1005
                self.closed = (code, payload[2:].decode("utf-8", "replace"))
            return op, payload

    def read_until_status(self, timeout=20.0, until=None):
        """Output bytes and the status object (None when the session closed
        without one, or 'until' appeared in the output first)."""
        out = b""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                op, p = self.recv_frame(max(left, 0.01))
            except (TimeoutError, socket.timeout, EOFError, OSError):
                return out, None
            if op == 8:
                return out, None
            if op == 2 and p[:1] == b"\x01":
                out += p[1:]
                if until is not None and until in out:
                    return out, None
            elif op == 2 and p[:1] == b"\x03":
                return out, json.loads(p[1:].decode())
