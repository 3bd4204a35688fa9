# The program the preview suite serves from a sandbox: `python3 program.py PORT ADDRESS`.
#   GET /          an HTML page whose script fetches /api/hello, sends 'ping' over /ws and writes
#                  both answers and document.cookie into <pre id=out> (the browser suite reads it)
#   GET /api/hello {"hello": "from the sandbox", "cookie": the Cookie header the program got}
#   GET /echo      the request as JSON: method, path, headers
#   GET /big?mib=N N MiB of 'x'
#   GET /hold      answers only after 120 s (a long poll); a line in held.log for each
#   GET /ws        a WebSocket that echoes each text frame
#   POST /count    the body's length
import base64, hashlib, json, socket, sys, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

PAGE = b'''<!doctype html>
<title>preview</title>
<pre id=out>waiting</pre>
<script>
(async () => {
  const out = document.getElementById('out');
  try {
    const hello = await (await fetch('/api/hello')).json();
    const echo = await new Promise((resolve, reject) => {
      const ws = new WebSocket('ws://' + location.host + '/ws');
      ws.onopen = () => ws.send('ping');
      ws.onmessage = (event) => { resolve(event.data); ws.close(); };
      ws.onerror = () => reject(new Error('websocket error'));
    });
    out.textContent = JSON.stringify({ hello, echo, cookie: document.cookie });
  } catch (error) {
    out.textContent = 'failed: ' + error;
  }
})();
</script>
'''

class Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6 if ':' in sys.argv[2] else socket.AF_INET
    daemon_threads = True

class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def answer(self, body, status=200, kind='application/json'):
        self.send_response(status)
        self.send_header('content-type', kind)
        self.send_header('content-length', str(len(body)))
        self.send_header('set-cookie', 'app=1; Path=/')
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith('/big'):
            mib = int(self.path.split('mib=')[1])
            self.send_response(200)
            self.send_header('content-length', str(mib * 1024 * 1024))
            self.end_headers()
            chunk = b'x' * (1024 * 1024)
            for _ in range(mib):
                self.wfile.write(chunk)
        elif self.path == '/hold':
            with open('held.log', 'a') as f:
                f.write('held\n')
            time.sleep(120)
            self.answer(b'late')
        elif self.path == '/ws':
            self.websocket()
        elif self.path == '/':
            self.answer(PAGE, kind='text/html; charset=utf-8')
        elif self.path == '/api/hello':
            self.answer(json.dumps({'hello': 'from the sandbox', 'cookie': self.headers.get('cookie')}).encode())
        else:
            self.answer(json.dumps({'method': self.command, 'path': self.path, 'headers': {k.lower(): v for k, v in self.headers.items()}}).encode())

    def do_POST(self):
        length = int(self.headers.get('content-length', '0'))
        got = 0
        while got < length:
            part = self.rfile.read(min(65536, length - got))
            if not part:
                break
            got += len(part)
        self.answer(json.dumps({'received': got}).encode())

    def websocket(self):
        key = self.headers['sec-websocket-key']
        accept = base64.b64encode(hashlib.sha1((key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').encode()).digest()).decode()
        self.send_response(101)
        self.send_header('upgrade', 'websocket')
        self.send_header('connection', 'Upgrade')
        self.send_header('sec-websocket-accept', accept)
        self.end_headers()
        self.wfile.flush()
        while True:
            head = self.rfile.read(2)
            if len(head) < 2:
                return
            opcode, length = head[0] & 0x0F, head[1] & 0x7F
            if length == 126:
                length = int.from_bytes(self.rfile.read(2), 'big')
            elif length == 127:
                length = int.from_bytes(self.rfile.read(8), 'big')
            mask = self.rfile.read(4) if head[1] & 0x80 else b'\0\0\0\0'
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(length)))
            if opcode == 8:
                return
            reply = b'echo:' + data
            self.wfile.write(bytes([0x81, len(reply)]) + reply if len(reply) < 126 else bytes([0x81, 126]) + len(reply).to_bytes(2, 'big') + reply)
            self.wfile.flush()

Server((sys.argv[2], int(sys.argv[1])), Handler).serve_forever()
