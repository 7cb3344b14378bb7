#!/usr/bin/env python3
"""fake_openai.py - a local, threaded HTTP server that speaks OpenAI's streaming chat-completions
protocol (POST /chat/completions and /v1/chat/completions) for testing src/agent/openai.c.

What to do with a request is chosen by its model name, "CASE/ACTIONS/seed=N": ACTIONS is a
comma-separated list, the k-th request of that model getting the k-th action (the last one repeats):
  ok          stream a reply: seeded random text (unicode, quotes, backslashes, newlines) in random
              deltas, the SSE bytes written in random pieces, LF or CRLF, comments, event:/id: lines,
              a second choice, role-only and null deltas, multi-line data events, chunked or
              close-delimited transfer, then a usage chunk and [DONE]
  bytes       as ok, short, every byte written and flushed on its own
  big         as ok, about 1 MiB of text
  nousage     as ok without the usage chunk
  json        a non-streamed chat.completion object (a server that ignores "stream")
  429:S       429 with Retry-After: S          429ms:MS  429 with retry-after-ms: MS
  429date:S   429 with Retry-After: the HTTP date S seconds from now
  500 502 503 the status with an error body    400 401 404  the status with an OpenAI error object
  break       stream part of the reply, then close the connection cleanly (no [DONE])
  breakchunk  chunked stream, then close the connection in the middle of a chunk
  errchunk    stream part of the reply, then an error event
  garbage     stream part of the reply, then a chunk that is not JSON
  stall:S     stream part of the reply, then send nothing for S seconds
  stallhead:S send nothing for S seconds before the status line
Every request is checked (JSON body, fields, messages) and recorded in FakeServer.records: the
model, the attempt, the action, the text and usage it sent, the messages, the Authorization header
and any problem found with the request.

Standalone (manual use): fake_openai.py [--port P]; prints the base URL.
"""
import email.utils
import json
import random
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ALPHABET = (list("abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789{}()[];=+-*/<>.,_") +
            ['"', "\\", "\n", "\t", "\r", "/", "'", "\u00e9", "\u03bb", "\u4e2d", "\U0001d11e",
             "\U0001f600", "\u2028", "\x01", "\x1f", "\x7f", "\u00a0"])


def gen_text(rng, n):
    """Seeded random text of n characters drawn from ALPHABET (mostly plain, some awkward)."""
    return "".join(rng.choice(ALPHABET) for _ in range(n))


def split_random(rng, s, lo, hi):
    """Splits s into consecutive pieces of random lengths in [lo, hi]."""
    out, i = [], 0
    while i < len(s):
        k = rng.randint(lo, hi)
        out.append(s[i:i + k])
        i += k
    return out


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port=0):
        super().__init__(("127.0.0.1", port), Handler)
        self.lock = threading.Lock()
        self.counts = {}
        self.records = []

    def handle_error(self, request, client_address):
        """A client that went away is no error of the server's (the tests break connections)."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)

    @property
    def base_url(self):
        return "http://127.0.0.1:%d/v1" % self.server_address[1]

    def next_attempt(self, model):
        with self.lock:
            k = self.counts.get(model, 0)
            self.counts[model] = k + 1
            return k

    def add(self, rec):
        with self.lock:
            self.records.append(rec)

    def records_of(self, model):
        with self.lock:
            return [r for r in self.records if r["model"] == model]


def check_request(body, rec):
    """Checks a chat-completions request body; returns the parsed object and fills rec."""
    def bad_const(c):
        raise ValueError("non-standard constant " + c)
    try:
        req = json.loads(body.decode("utf-8"), parse_constant=bad_const)
    except (UnicodeDecodeError, ValueError) as e:
        rec["problems"].append("body is not valid JSON: %s" % e)
        return None
    if not isinstance(req, dict):
        rec["problems"].append("body is not an object")
        return None
    if not isinstance(req.get("model"), str):
        rec["problems"].append("model is not a string")
    if req.get("stream") is not True:
        rec["problems"].append("stream is not true")
    if req.get("stream_options") != {"include_usage": True}:
        rec["problems"].append("stream_options is not {include_usage: true}")
    msgs = req.get("messages")
    if not isinstance(msgs, list) or not msgs:
        rec["problems"].append("messages is not a non-empty list")
    else:
        for m in msgs:
            if not (isinstance(m, dict) and set(m) == {"role", "content"} and
                    isinstance(m["role"], str) and isinstance(m["content"], str)):
                rec["problems"].append("bad message %r" % (m,))
        rec["messages"] = msgs
    for k in req:
        if k not in ("model", "messages", "stream", "stream_options", "temperature", "max_tokens"):
            rec["problems"].append("unexpected field " + k)
    rec["temperature"] = req.get("temperature")
    rec["max_tokens"] = req.get("max_tokens")
    return req


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        if self.path not in ("/v1/chat/completions", "/chat/completions"):
            self.send_error(404, "no such path")
            return
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        rec = {"model": None, "attempt": None, "action": None, "content": None, "usage": None,
               "messages": None, "problems": [], "auth": self.headers.get("Authorization"),
               "content_type": self.headers.get("Content-Type"), "body_bytes": len(body)}
        if rec["content_type"] != "application/json":
            rec["problems"].append("content-type is %r" % rec["content_type"])
        req = check_request(body, rec)
        model = req.get("model") if isinstance(req, dict) and isinstance(req.get("model"), str) else "?"
        rec["model"] = model
        parts = model.split("/")
        actions = parts[1].split(",") if len(parts) > 1 else ["ok"]
        seed = 0
        for p in parts[2:]:
            if p.startswith("seed="):
                seed = int(p[5:].split("#")[0])
        k = self.server.next_attempt(model)
        action = actions[min(k, len(actions) - 1)]
        rec["attempt"], rec["action"] = k + 1, action
        self.server.add(rec)  # now, not when done: a stalled or broken response ends after its client
        self.rng = random.Random("%s|%d" % (model, k))
        self.seed = seed
        self.rec = rec
        try:
            if rec["problems"] and req is None:
                self.error(400, "invalid request: " + "; ".join(rec["problems"]))
            else:
                self.act(action, req)
        except (BrokenPipeError, ConnectionResetError):
            rec["client_gone"] = True  # expected in the cases that break or stall

    # ---- responses ----

    def error(self, status, message, headers=(), plain=False):
        body = (message if plain else json.dumps(
            {"error": {"message": message, "type": "test_error", "code": status}})).encode()
        self.send_response(status)
        for h, v in headers:
            self.send_header(h, v)
        self.send_header("Content-Type", "text/plain" if plain else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def act(self, action, req):
        name, _, arg = action.partition(":")
        rng = self.rng
        if name in ("400", "401", "404"):
            msg = 'test %s: bad "value" \u00e9\\ token-%d' % (name, rng.randint(0, 10**9))
            self.rec["content"] = msg
            self.error(int(name), msg)
        elif name in ("500", "502", "503"):
            msg = "server error %s #%d" % (name, rng.randint(0, 10**9))
            self.rec["content"] = msg
            self.error(int(name), msg, plain=(name == "503"))
        elif name == "429":
            self.error(429, "rate limited", headers=[("Retry-After", arg)])
        elif name == "429date":
            self.error(429, "rate limited", headers=[("Retry-After", email.utils.formatdate(
                time.time() + float(arg), usegmt=True))])
        elif name == "429ms":
            self.error(429, "rate limited", headers=[("retry-after-ms", arg)])
        elif name == "stallhead":
            time.sleep(float(arg))
            self.error(500, "stalled")
        elif name == "json":
            text = gen_text(rng, rng.randint(1, 300))
            usage = {"prompt_tokens": rng.randint(1, 10**6), "completion_tokens": rng.randint(1, 10**6)}
            self.rec["content"], self.rec["usage"] = text, [usage["prompt_tokens"], usage["completion_tokens"]]
            body = json.dumps({"id": "x", "object": "chat.completion", "model": req.get("model"),
                               "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                            "finish_reason": "stop"}], "usage": usage}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.stream(name, arg, req)

    def stream(self, name, arg, req):
        rng = self.rng
        size = {"bytes": rng.randint(1, 40), "big": 1 << 20}.get(name, rng.randint(0, 3000))
        text = gen_text(rng, size)
        chunked = name == "breakchunk" or (name != "break" and rng.random() < 0.5)
        eol = "\r\n" if name == "bytes" or rng.random() < 0.3 else "\n"  # bytes: split inside CRLF too
        deltas = split_random(rng, text, 1, 40 if name != "big" else 4000)
        events = []
        base = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": req.get("model")}

        def ev(obj, multiline=False):
            s = json.dumps(obj, ensure_ascii=rng.random() < 0.5)
            at = s.find(', "choices": ')  # structural: the keys before it hold no such text
            if multiline and at > 0:  # one event over two data: lines, joined by a newline (JSON whitespace)
                return "data: " + s[:at + 1] + eol + "data:" + s[at + 1:] + eol + eol
            return "data: " + s + eol + eol

        events.append(ev(dict(base, choices=[{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}])))
        for d in deltas:
            if rng.random() < 0.05:
                events.append(": keep-alive" + eol + eol)
            if rng.random() < 0.05:
                events.append("event: message" + eol + "id: %d" % rng.randint(0, 99) + eol)
            choices = [{"index": 0, "delta": {"content": d}, "finish_reason": None}]
            if rng.random() < 0.1:
                choices.append({"index": 1, "delta": {"content": "NOT-CHOICE-0"}, "finish_reason": None})
                rng.shuffle(choices)
            if rng.random() < 0.05:
                events.append(ev(dict(base, choices=[{"index": 0, "delta": {"content": None}}])))
            events.append(ev(dict(base, choices=choices), multiline=rng.random() < 0.1))
        events.append(ev(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}])))
        usage = None
        if name != "nousage":
            usage = {"prompt_tokens": rng.randint(1, 10**6), "completion_tokens": rng.randint(1, 10**6),
                     "total_tokens": 0}
            events.append(ev(dict(base, choices=[], usage=usage)))
        events.append("data: [DONE]" + eol + eol)
        cut = None  # events sent before the fault
        if name in ("break", "breakchunk", "errchunk", "garbage", "stall"):
            cut = rng.randint(1, max(1, len(deltas)))
            events = events[:cut]
            if name == "errchunk":
                events.append(ev({"error": {"message": "overloaded mid-stream #%d" % rng.randint(0, 10**6)}}))
            elif name == "garbage":
                events.append("data: {\"choices\": [" + eol + eol)
        else:
            self.rec["content"] = text
            self.rec["usage"] = [usage["prompt_tokens"], usage["completion_tokens"]] if usage else None
        data = "".join(events).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.flush()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pieces = list(data) if name == "bytes" else split_random(rng, data, 1, 600 if name != "big" else 60000)
        if name == "bytes":
            pieces = [bytes([b]) for b in pieces]
        if name == "breakchunk":
            pieces = pieces[:max(1, len(pieces) // 2)]
        for i, p in enumerate(pieces):
            if chunked:
                if name == "breakchunk" and i == len(pieces) - 1:
                    self.wfile.write(b"%x\r\n" % (len(p) + 100) + p)  # promise more than is sent
                    break
                self.wfile.write(b"%x\r\n" % len(p) + p + b"\r\n")
            else:
                self.wfile.write(p)
            self.wfile.flush()
            if name == "bytes" or rng.random() < 0.02:
                time.sleep(0.001)
        if name == "stall":
            time.sleep(float(arg))
        if chunked and name not in ("breakchunk", "stall"):
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        if name in ("break", "breakchunk", "stall"):
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    port = 0
    if len(sys.argv) == 3 and sys.argv[1] == "--port":
        port = int(sys.argv[2])
    srv = FakeServer(port)
    print(srv.base_url, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
