"""A NATS client written from the protocol (TCP, TLS with a client certificate, CONNECT, PUB,
HPUB, SUB, MSG, HMSG, PING/PONG, -ERR), independent of libnats and of acan's space: what an
attacker holding a role's files would speak. For the end-to-end security tests. One thread: the
server's messages are read by whichever call waits for something (an OpenSSL connection is not
to be read and written from two threads at once)."""
import json
import os
import queue
import socket
import ssl
import time


class NatsRaw:
    def __init__(self, url, deployment, role, inbox):
        """Connects to tls://HOST:PORT with the deployment's CA, the role's certificate, key and
        password; replies to requests come under `inbox` (the role's own prefix)."""
        host, port = url.split("://", 1)[1].rsplit(":", 1)
        raw = socket.create_connection((host, int(port)), timeout=10)
        self._buf = b""
        self._sock = raw
        self.info = json.loads(self._line()[len(b"INFO "):])
        ctx = ssl.create_default_context(cafile=os.path.join(deployment, "ca.pem"))
        ctx.load_cert_chain(os.path.join(deployment, role + ".pem"),
                            os.path.join(deployment, role + "-key.pem"))
        self._sock = ctx.wrap_socket(raw, server_hostname=host)
        password = open(os.path.join(deployment, role + ".password")).read().strip()
        self._send(b"CONNECT " + json.dumps({
            "verbose": False, "pedantic": False, "tls_required": True, "user": role,
            "pass": password, "headers": True, "no_responders": True, "protocol": 1,
            "name": "raw-" + role, "lang": "python"}).encode() + b"\r\nPING\r\n")
        first = self._line()
        if not first.startswith(b"PONG"):
            raise RuntimeError("not connected: " + first.decode(errors="replace"))
        self.errors = []          # the server's -ERR lines, in order
        self._subs = {}           # sid -> queue of (subject, headers, payload)
        self._next_sid = 1
        self._inbox = inbox
        self._pongs = 0

    # ---- wire ----
    def _send(self, data):
        self._sock.sendall(data)

    def _fill(self):
        chunk = self._sock.recv(1 << 20)
        if not chunk:
            raise EOFError("the server closed the connection")
        self._buf += chunk

    def _line(self):
        while b"\r\n" not in self._buf:
            self._fill()
        line, self._buf = self._buf.split(b"\r\n", 1)
        return line

    def _read_one(self):
        # Parsed in place and consumed only once whole: a read that times out half way leaves
        # the buffer as it was.
        while (end := self._buf.find(b"\r\n")) < 0:
            self._fill()
        line, pos = self._buf[:end], end + 2
        if line.startswith(b"MSG ") or line.startswith(b"HMSG "):
            parts = line.split()
            headered = parts[0] == b"HMSG"
            total = int(parts[-1])
            header_len = int(parts[-2]) if headered else 0
            while len(self._buf) < pos + total + 2:
                self._fill()
            data = self._buf[pos:pos + total]
            self._buf = self._buf[pos + total + 2:]
            headers = self._headers(data[:header_len]) if headered else {}
            q = self._subs.get(int(parts[2]))
            if q is not None:
                q.put((parts[1].decode(), headers, data[header_len:]))
            return
        self._buf = self._buf[pos:]
        if line.startswith(b"PING"):
            self._send(b"PONG\r\n")
        elif line.startswith(b"PONG"):
            self._pongs += 1
        elif line.startswith(b"-ERR"):
            self.errors.append(line[5:].decode(errors="replace").strip("'"))

    def wait(self, done, timeout):
        """Reads what the server sends until done() or `timeout` seconds; returns done()."""
        end = time.time() + timeout
        while not done():
            left = end - time.time()
            if left <= 0:
                return False
            self._sock.settimeout(left)
            try:
                self._read_one()
            except (socket.timeout, TimeoutError):
                return done()
        return True

    @staticmethod
    def _headers(block):
        lines = block.decode(errors="replace").split("\r\n")
        out = {"_status": lines[0][len("NATS/1.0"):].strip()}
        for l in lines[1:]:
            if ": " in l:
                k, v = l.split(": ", 1)
                out[k] = v
        return out

    def flush(self, timeout=5):
        """Once the server answered a PING: it has handled (and refused) all sent before it."""
        want = self._pongs + 1
        self._send(b"PING\r\n")
        if not self.wait(lambda: self._pongs >= want, timeout):
            raise TimeoutError("the server did not answer a PING")

    def next(self, q, timeout):
        """The next message of a subscription's queue, or None after `timeout` seconds."""
        if self.wait(lambda: not q.empty(), timeout):
            return q.get()
        return None

    # ---- operations ----
    def subscribe(self, subject):
        sid = self._next_sid
        self._next_sid += 1
        self._subs[sid] = queue.Queue()
        self._send(f"SUB {subject} {sid}\r\n".encode())
        return self._subs[sid]

    def publish(self, subject, payload=b"", reply=None, headers=None):
        reply_part = f" {reply}" if reply else ""
        if headers:
            block = ("NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                     + "\r\n").encode()
            self._send(f"HPUB {subject}{reply_part} {len(block)} {len(block) + len(payload)}\r\n"
                       .encode() + block + payload + b"\r\n")
        else:
            self._send(f"PUB {subject}{reply_part} {len(payload)}\r\n".encode() + payload + b"\r\n")

    def refused(self, subject, verb="Publish", before=None):
        """Whether the server sent a permission violation for `subject` (since error `before`)."""
        self.flush()
        want = f'Permissions Violation for {verb} to "{subject}"'
        return any(want in e for e in self.errors[before or 0:])

    def request(self, subject, payload=b"", timeout=2, headers=None):
        """(headers, payload) of the reply; None when none came (a refused request gets none)."""
        inbox = f"{self._inbox}.{os.urandom(8).hex()}"
        q = self.subscribe(inbox)
        self.publish(subject, payload, reply=inbox, headers=headers)
        got = self.next(q, timeout)
        return None if got is None else (got[1], got[2])

    def direct_get(self, stream, body):
        """The message a direct get of `stream` returns: (headers, payload), or None."""
        got = self.request(f"$JS.API.DIRECT.GET.{stream}", json.dumps(body).encode())
        if got is None or got[0].get("_status", "").startswith("404"):
            return None
        return got

    def api(self, verb, stream, body=None, timeout=2):
        """A JetStream API request's JSON answer, or None when refused (no answer)."""
        got = self.request(f"$JS.API.{verb}.{stream}", json.dumps(body or {}).encode(), timeout)
        return None if got is None else json.loads(got[1] or b"{}")
