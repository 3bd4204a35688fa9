import { request, type IncomingHttpHeaders } from 'node:http';

export interface PreviewAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A GET of a preview URL (`http://<port>-<id>.localhost:<api port>/…`) as a browser on *.localhost
 * sends it: to the API's port on loopback, with the preview's Host (Node resolves no *.localhost).
 */
export function fetchPreviewUrl(url: string, headers: Record<string, string> = {}): Promise<PreviewAnswer> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: u.port, path: `${u.pathname}${u.search}`, headers: { host: u.host, ...headers }, setHost: false, agent: false });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
