// A small driver for headless Chromium over the DevTools protocol (CDP), for Ember's browser
// tests (node 20 with --experimental-websocket).
//
//   import {serve, launch} from './cdp.mjs';
//   const server = await serve(dir, {isolate: true});      // http://127.0.0.1:PORT/
//   const browser = await launch({webgpu: true, timeoutMs: 120000});
//   try {
//     const page = await browser.newPage(server.url + 'index.html');
//     const v = await page.evaluate('navigator.gpu.requestAdapter().then(a => !!a)');
//   } finally { await browser.close(); server.close(); }
//
// Pages are served from 127.0.0.1 (a secure context, which WebGPU needs). browser.close() always
// kills Chromium's process group and removes its profile folder; it also runs on process exit,
// SIGINT/SIGTERM, and when the global timeout fires (which then rejects pending calls and exits
// the process with status 2).
import {spawn} from 'node:child_process';
import {mkdtempSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs';
import {createServer} from 'node:http';
import {tmpdir} from 'node:os';
import {extname, join, normalize, resolve, sep} from 'node:path';

const kMime = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.wgsl': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.css': 'text/css',
  '.png': 'image/png',
  '.safetensors': 'application/octet-stream',
  '.bin': 'application/octet-stream',
};

/// Serves the files under rootDir on 127.0.0.1; isolate adds the COOP/COEP headers that
/// SharedArrayBuffer (wasm threads) needs. Returns {url (ending in '/'), close()}.
export async function serve(rootDir, {port = 0, isolate = false} = {}) {
  const root = resolve(rootDir);
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const file = normalize(join(root, path.endsWith('/') ? path + 'index.html' : path));
    const headers = {'Cache-Control': 'no-store'};
    if (isolate) {
      headers['Cross-Origin-Opener-Policy'] = 'same-origin';
      headers['Cross-Origin-Embedder-Policy'] = 'require-corp';
    }
    let body;
    try {
      if (!(file === root || file.startsWith(root + sep)) || !statSync(file).isFile()) throw 0;
      body = readFileSync(file);
    } catch {
      res.writeHead(404, headers).end('not found');
      return;
    }
    headers['Content-Type'] = kMime[extname(file)] || 'application/octet-stream';
    res.writeHead(200, headers).end(body);
  });
  await new Promise((ok, fail) => server.once('error', fail).listen(port, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    close: () => server.close(),
  };
}

/// A CDP connection to one target (the browser or a page's session).
class Connection {
  constructor(ws) {
    this.ws = ws;
    this.nextId = 1;
    this.pending = new Map();
    this.listeners = [];
    ws.addEventListener('message', (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.id !== undefined) {
        const p = this.pending.get(msg.id);
        if (!p) return;
        this.pending.delete(msg.id);
        if (msg.error) p.fail(new Error(`${p.method}: ${msg.error.message}`));
        else p.ok(msg.result);
      } else {
        for (const l of this.listeners) l(msg);
      }
    });
    ws.addEventListener('close', () => this.failAll(new Error('DevTools connection closed')));
  }
  send(method, params = {}, sessionId) {
    const id = this.nextId++;
    const msg = {id, method, params};
    if (sessionId) msg.sessionId = sessionId;
    return new Promise((ok, fail) => {
      this.pending.set(id, {ok, fail, method});
      this.ws.send(JSON.stringify(msg));
    });
  }
  failAll(err) {
    for (const p of this.pending.values()) p.fail(err);
    this.pending.clear();
  }
}

class Page {
  constructor(conn, sessionId) {
    this.conn = conn;
    this.sessionId = sessionId;
    this.consoleMessages = [];  // {type, text}: console calls and uncaught exceptions
    conn.listeners.push((msg) => {
      if (msg.sessionId !== sessionId) return;
      if (msg.method === 'Runtime.consoleAPICalled') {
        const text = msg.params.args.map((a) => a.value ?? a.description ?? '').join(' ');
        this.consoleMessages.push({type: msg.params.type, text});
      } else if (msg.method === 'Runtime.exceptionThrown') {
        const d = msg.params.exceptionDetails;
        this.consoleMessages.push({type: 'exception', text: d.exception?.description ?? d.text});
      }
    });
  }
  send(method, params) { return this.conn.send(method, params, this.sessionId); }

  /// Evaluates expr in the page, awaiting a promise; returns the value (JSON-serialisable);
  /// throws with the page's exception text.
  async evaluate(expr) {
    const r = await this.send('Runtime.evaluate',
                              {expression: expr, awaitPromise: true, returnByValue: true});
    if (r.exceptionDetails) {
      const d = r.exceptionDetails;
      throw new Error(`page: ${d.exception?.description ?? d.text}`);
    }
    return r.result.value;
  }

  /// Saves a PNG of the viewport, sized width x height.
  async screenshot(pngPath, {width = 800, height = 600} = {}) {
    await this.send('Emulation.setDeviceMetricsOverride',
                    {width, height, deviceScaleFactor: 1, mobile: false});
    const r = await this.send('Page.captureScreenshot', {format: 'png'});
    writeFileSync(pngPath, Buffer.from(r.data, 'base64'));
  }

  /// type: 'mousePressed' | 'mouseMoved' | 'mouseReleased' (left button).
  mouse(type, x, y) {
    return this.send('Input.dispatchMouseEvent',
                     {type, x, y, button: 'left', buttons: type === 'mouseReleased' ? 0 : 1,
                      clickCount: type === 'mouseMoved' ? 0 : 1});
  }
}

/// Starts headless Chromium (WebGPU on SwiftShader when webgpu). timeoutMs bounds the whole
/// session: past it the browser is closed and the process exits with status 2.
export async function launch({webgpu = true, timeoutMs = 300000, chromium = 'chromium'} = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'ember-chromium-'));
  const args = ['--headless=new', '--no-sandbox', '--no-first-run',
                '--disable-background-networking', '--disable-component-update', '--disable-sync',
                `--user-data-dir=${profile}`, '--remote-debugging-port=0'];
  if (webgpu) args.push('--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader');
  args.push('about:blank');
  // its own process group, so that close() kills every helper process with it
  const proc = spawn(chromium, args, {stdio: ['ignore', 'ignore', 'pipe'], detached: true});
  let closed = false, conn = null;
  const close = () => {
    if (closed) return;
    closed = true;
    clearTimeout(timer);
    process.removeListener('exit', close);
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    try { conn?.ws.close(); } catch {}
    try { process.kill(-proc.pid, 'SIGKILL'); } catch {}
    // Chromium's helpers may still write to the profile for a moment after the kill
    for (let i = 0; i < 5; ++i) {
      try { rmSync(profile, {recursive: true, force: true}); break; } catch {}
    }
  };
  const onSignal = (sig) => {
    close();
    process.exit(sig === 'SIGINT' ? 130 : 143);
  };
  process.on('exit', close);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const timer = setTimeout(() => {
    console.error(`cdp: timed out after ${timeoutMs} ms; closing the browser`);
    conn?.failAll(new Error('cdp: global timeout'));
    close();
    process.exit(2);
  }, timeoutMs);

  try {
    const wsUrl = await new Promise((ok, fail) => {
      let err = '';
      proc.on('error', (e) => fail(new Error(`cannot start ${chromium}: ${e.message}`)));
      proc.on('exit', (code) => fail(new Error(`${chromium} exited (${code}): ${err.slice(-2000)}`)));
      proc.stderr.on('data', (d) => {
        err += d;
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
        if (m) ok(m[1]);
      });
    });
    if (typeof WebSocket === 'undefined')
      throw new Error('no WebSocket in this node: run node with --experimental-websocket');
    const ws = new WebSocket(wsUrl);
    await new Promise((ok, fail) => {
      ws.addEventListener('open', ok, {once: true});
      ws.addEventListener('error', () => fail(new Error(`cannot connect to ${wsUrl}`)), {once: true});
    });
    conn = new Connection(ws);
  } catch (e) {
    close();
    throw e;
  }

  return {
    /// Opens url in a new tab; resolves once it has loaded.
    async newPage(url) {
      const {targetId} = await conn.send('Target.createTarget', {url: 'about:blank'});
      const {sessionId} = await conn.send('Target.attachToTarget', {targetId, flatten: true});
      const page = new Page(conn, sessionId);
      await page.send('Runtime.enable');
      await page.send('Page.enable');
      const loaded = new Promise((ok) => conn.listeners.push((m) => {
        if (m.sessionId === sessionId && m.method === 'Page.loadEventFired') ok();
      }));
      const nav = await page.send('Page.navigate', {url});
      if (nav.errorText) throw new Error(`cannot open ${url}: ${nav.errorText}`);
      await loaded;
      return page;
    },
    close: async () => close(),
  };
}
