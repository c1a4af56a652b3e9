"""A stub LLM server for the tests: replays scripted replies in the OpenAI (/v1/chat/completions)
and Anthropic (/v1/messages) wire formats on 127.0.0.1. Never touches the network.

    python tests/stub_llm/server.py SCRIPT.json PORT_FILE

SCRIPT.json is a list of replies, served in order (the last one repeats):
  {"text": "...", "usage": [in, out]}       a model answer in the format of the request's path
  {"status": 429, "headers": {"Retry-After": "1"}, "body": "..."}   a raw HTTP answer
  {"delay_s": 5, ...}                        wait before answering
  {"drop": true}                             close the connection without answering
  {"big_mb": 10}                             a 200 answer with a body of that size
The server writes its port to PORT_FILE once listening, and appends every request it gets
(path, headers, body) to SCRIPT.json + ".requests.jsonl".
"""

import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def wire(path: str, text: str, usage) -> dict:
    i, o = usage or (100, 50)
    if path.endswith("/v1/messages"):
        return {"id": "msg_stub", "type": "message", "role": "assistant", "model": "stub",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": i, "output_tokens": o}}
    return {"id": "chatcmpl-stub", "object": "chat.completion", "model": "stub",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        srv = self.server
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("utf-8", "replace")
        with srv.lock:
            idx = min(srv.next, len(srv.script) - 1)
            srv.next += 1
            with open(srv.log_path, "a") as f:
                f.write(json.dumps({"path": self.path, "headers": dict(self.headers),
                                    "body": body}) + "\n")
        r = srv.script[idx]
        if r.get("delay_s"):
            time.sleep(r["delay_s"])
        if r.get("drop"):
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        status, headers = r.get("status", 200), dict(r.get("headers", {}))
        if "big_mb" in r:
            payload = b"{\"choices\": [{\"message\": {\"content\": \"" + b"x" * (r["big_mb"] << 20) + b"\"}}]}"
        elif "text" in r:
            payload = json.dumps(wire(self.path, r["text"], r.get("usage"))).encode()
        else:
            payload = r.get("body", "").encode()
        self.send_response(status)
        headers.setdefault("Content-Type", "application/json")
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        try:
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass


def main():
    script_path, port_file = sys.argv[1], sys.argv[2]
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    with open(script_path) as f:
        srv.script = json.load(f)
    srv.next, srv.lock, srv.log_path = 0, threading.Lock(), script_path + ".requests.jsonl"
    with open(port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.replace(port_file + ".tmp", port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
