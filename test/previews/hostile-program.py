# The program the hostile-traffic suite serves from a sandbox: `python3 hostile-program.py PORT`.
# A naive server: it reads request after request off a connection until the connection ends,
# whatever the Connection header says, so bytes that arrive unframed after a request are read as
# another request. What it reads and writes is told in files, which the suite reads through the
# files API (never through the preview, whose places it may be filling):
#   seen.log           each request line read, on every connection, a line each
#   connections.log    'open' as each connection is accepted, 'closed N' as it ends after N requests
#   written            how many MiB /big has written so far
#   GET /silent        read, and never answered
#   GET /big?mib=N     N MiB, a MiB a write
#   GET /badstatus     a status line with a control character in its reason
#   GET /sse           three server-sent events, chunked, 300 ms apart, after a 103 Early Hints
#   GET /untilclose    200 KiB framed by neither: the connection's end (writing) ends it
#   GET /twoframes     an answer framed both by Content-Length and as chunked
#   anything else      {method, path, headers, body: the body's length} (Content-Length or chunked)
import json, socket, sys, threading, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

SEEN = open('seen.log', 'a', buffering=1)
CONNECTIONS = open('connections.log', 'a', buffering=1)
LOCK = threading.Lock()
WRITTEN = [0]

class Server(ThreadingHTTPServer):
    daemon_threads = True

class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def handle(self):
        with LOCK:
            CONNECTIONS.write('open\n')
        requests = 0
        try:
            while True:
                self.handle_one_request()
                if not self.raw_requestline:
                    return
                requests += 1
        finally:
            with LOCK:
                CONNECTIONS.write('closed %d\n' % requests)

    def answer(self, body):
        self.send_response(200)
        self.send_header('content-type', 'application/json')
        self.send_header('content-length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def body_length(self):
        if 'chunked' in self.headers.get('transfer-encoding', ''):
            total = 0
            while True:
                size = int(self.rfile.readline().split(b';')[0].strip() or b'0', 16)
                if size == 0:
                    while self.rfile.readline() not in (b'\r\n', b'\n', b''):
                        pass
                    return total
                total += len(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get('content-length', '0'))
        return len(self.rfile.read(length)) if length else 0

    def route(self):
        with LOCK:
            SEEN.write(self.requestline + '\n')
        if self.path.startswith('/silent'):
            time.sleep(3600)
        elif self.path == '/badstatus':
            self.wfile.write(b'HTTP/1.1 200 O\x01K\r\ncontent-length: 2\r\n\r\nok')
            self.wfile.flush()
        elif self.path == '/sse':
            self.wfile.write(b'HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n')
            self.wfile.write(b'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n')
            self.wfile.flush()
            for i in range(3):
                event = ('data: %d %.3f\n\n' % (i, time.time())).encode()
                self.wfile.write(b'%x\r\n%s\r\n' % (len(event), event))
                self.wfile.flush()
                time.sleep(0.3)
            self.wfile.write(b'0\r\n\r\n')
            self.wfile.flush()
        elif self.path == '/untilclose':
            # Neither a length nor chunks: the answer ends as the connection does.
            self.wfile.write(b'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\n')
            for i in range(50):
                self.wfile.write(b'%05d' % i + b'y' * 4091)
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
        elif self.path == '/twoframes':
            self.wfile.write(b'HTTP/1.1 200 OK\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n')
            self.wfile.flush()
        elif self.path.startswith('/big'):
            mib = int(self.path.split('mib=')[1])
            self.send_response(200)
            self.send_header('content-length', str(mib * 1024 * 1024))
            self.end_headers()
            chunk = b'x' * (1024 * 1024)
            for _ in range(mib):
                self.wfile.write(chunk)
                WRITTEN[0] += 1
                with open('written', 'w') as f:
                    f.write(str(WRITTEN[0]))
        else:
            got = self.body_length()
            self.answer(json.dumps({'method': self.command, 'path': self.path, 'headers': {k.lower(): v for k, v in self.headers.items()}, 'body': got}).encode())

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = route

Server(('127.0.0.1', int(sys.argv[1])), Handler).serve_forever()
