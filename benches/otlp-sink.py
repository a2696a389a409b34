#!/usr/bin/env python3
"""An OTLP/HTTP sink for benches/compare.sh --feature telemetry: answers every
POST /v1/traces with 200 and keeps nothing, so a run measures the exporting server, not
a collector. Prints its port on the first line; stops on SIGTERM."""
import http.server
import sys


class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(server.server_address[1], flush=True)
sys.stdout.close()
server.serve_forever()
