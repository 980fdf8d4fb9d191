// Bounded hostile load on `qdqrt serve` over loopback, then SIGTERM at a seeded random moment:
//  - 40 slow clients trickle a request head, one byte every 2 s (reconnecting when dropped);
//  - 16 keep-alive clients send valid binary requests, 8 per second in total, whose outputs must
//    equal the ones served when idle, bit for bit;
//  - floods of 100 connections at once;
//  - attacks, one after another: a repeated output name, a 3 MiB chunked body and a gzip bomb over
//    the 1 MiB limit, 5,000 headers, a transfer coding other than chunked, JSON nested 100 deep;
//  - a readiness probe on a new connection every 500 ms.
// Passes when every well-formed request sent before the signal got its right answer or 429/503,
// every attack got its 4xx (or 429/503), every probe was answered, the resident size stayed within
// 1.5x of its size after warm-up, and the server exited 0 within 10 s of SIGTERM.
// Usage: node hostile_load_test.js QDQRT MODEL.onnx [DURATION_SECONDS=20] [SEED=1]
'use strict';
const http = require('http');
const net = require('net');
const zlib = require('zlib');
const { startServe, randomImages, binaryInferRequest, binaryOutput } = require('./serve_process');

const [binary, model, durationText = '20', seedText = '1'] = process.argv.slice(2);
const durationMs = Number(durationText) * 1000;
let seed = Number(seedText) >>> 0 || 1;
const random = () => { seed = (seed * 1103515245 + 12345) >>> 0; return seed / 4294967296; };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// One HTTP exchange on a fresh connection (raw bytes, so malformed requests can be sent).
// Resolves with the status (0 when the connection ended without one) or the socket error.
function rawExchange(port, bytes, timeoutMs = 15000) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let done = false;
    const finish = (result) => { if (!done) { done = true; socket.destroy(); resolve(result); } };
    socket.setTimeout(timeoutMs, () => finish({ error: 'timeout' }));
    socket.on('connect', () => socket.write(bytes, () => {}));
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      const text = received.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end));
      if (!length || received.length >= end + 4 + Number(length[1])) {
        finish({ status: Number(text.slice(9, 12)), body: text.slice(end + 4) });
      }
    });
    socket.on('error', (error) => finish({ error: error.code || error.message }));
    socket.on('close', () => finish(received.length ? { status: Number(received.toString('latin1').slice(9, 12)) } : { error: 'closed' }));
  });
}

function send(agent, port, { method = 'POST', path, body, headers }) {
  return new Promise((resolve) => {
    const request = http.request({ host: '127.0.0.1', port, method, path, headers, agent, timeout: 30000 }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => resolve({ response, body: Buffer.concat(chunks) }));
      response.on('error', (error) => resolve({ error, reused: request.reusedSocket }));
    });
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', (error) => resolve({ error, reused: request.reusedSocket }));
    request.end(body);
  });
}

function chunked(body, size) {
  const parts = [];
  for (let offset = 0; offset < body.length; offset += size) {
    const piece = body.subarray(offset, offset + size);
    parts.push(Buffer.from(piece.length.toString(16) + '\r\n'), piece, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

async function main() {
  const server = await startServe(binary, [`--model=fmnist=${model}`, '--maxBatch=8', '--maxBodyBytes=1048576',
                                           '--httpThreads=16', '--maxQueuedConnections=64', '--headerTimeout=3',
                                           '--readTimeout=3']);
  const port = server.ports.http;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  const pool = [];
  for (let index = 0; index < 4; ++index) {
    const batch = 1 + (index % 3);
    const request = binaryInferRequest(randomImages(batch, 900 + index), batch);
    const { response, body } = await send(agent, port, { path: '/v2/models/fmnist/infer', ...request });
    if (response.statusCode !== 200) throw new Error(`warm-up request failed: ${response.statusCode} ${body}`);
    pool.push({ request, expected: Buffer.from(binaryOutput(response, body)) });
  }
  const valid = JSON.stringify({ inputs: [{ name: 'input', shape: [1, 1, 28, 28], datatype: 'FP32', data: new Array(784).fill(0.5) }] });
  const head = (extra) => `POST /v2/models/fmnist/infer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${extra}\r\n`;
  const padded = Buffer.from(valid.slice(0, -1) + ' '.repeat(3 << 20) + '}');
  const bomb = zlib.gzipSync(Buffer.alloc(64 << 20, 0x20), { level: 9 });
  const attacks = [
    { name: 'repeated output', status: 400, bytes: (() => {
      const body = JSON.stringify({ ...JSON.parse(valid), outputs: Array(1000).fill({ name: 'output' }) });
      return Buffer.from(head(`Content-Length: ${body.length}\r\n`) + body);
    })() },
    { name: 'chunked 3 MiB', status: 413, bytes: Buffer.concat([Buffer.from(head('Transfer-Encoding: chunked\r\n')), chunked(padded, 65536)]) },
    { name: 'gzip bomb', status: 413, bytes: Buffer.concat([Buffer.from(head(`Content-Encoding: gzip\r\nContent-Length: ${bomb.length}\r\n`)), bomb]) },
    { name: '5000 headers', status: 431, bytes: Buffer.from('GET /v2/health/live HTTP/1.1\r\nHost: x\r\n' +
                                                          Array.from({ length: 5000 }, (_, i) => `X-${i}: 1\r\n`).join('') + '\r\n') },
    { name: 'transfer coding', status: 501, bytes: Buffer.from(head('Transfer-Encoding: gzip, chunked\r\n') + valid) },
    { name: 'deep JSON', status: 400, bytes: Buffer.from(head('Content-Length: 200\r\n') + '['.repeat(100) + ']'.repeat(100)) },
  ];
  // Warm-up of every request kind, so that the allocator's arenas have settled before RSS is taken.
  for (const attack of attacks) await rawExchange(port, attack.bytes);
  await sleep(500);
  const rssStart = server.rssKiB();
  let rssPeak = rssStart;

  const start = Date.now();
  const signalAt = start + durationMs * (0.7 + 0.2 * random());
  const before = (time) => time < signalAt;
  const counts = { valid: 0, valid_refused: 0, keepalive_retries: 0, slow_dropped: 0, flood_ok: 0, flood_429: 0,
                   attacks: 0, probes: 0, after_signal: 0, failures: 0 };
  let probeWorstMs = 0;
  const problems = [];
  const fail = (text) => { ++counts.failures; if (problems.length < 8) problems.push(text); };
  const running = () => Date.now() < signalAt;

  async function keepAliveClient(index) {
    await sleep(index * 125);
    while (running()) {
      const item = pool[Math.floor(random() * pool.length)];
      const sentAt = Date.now();
      let result = await send(agent, port, { path: '/v2/models/fmnist/infer', ...item.request });
      // A keep-alive connection the server closed as the request left: clients retry on a new one.
      if (result.error && result.reused && before(sentAt)) {
        ++counts.keepalive_retries;
        result = await send(agent, port, { path: '/v2/models/fmnist/infer', ...item.request });
      }
      if (result.error) {
        if (before(sentAt)) fail(`keep-alive: ${result.error.code || result.error.message}`); else ++counts.after_signal;
      } else if (result.response.statusCode === 200) {
        if (!binaryOutput(result.response, result.body).equals(item.expected)) fail('keep-alive: output differs');
        else ++counts.valid;
      } else if (result.response.statusCode === 429 || result.response.statusCode === 503) {
        ++counts.valid_refused;
      } else {
        fail(`keep-alive: ${result.response.statusCode} ${result.body.subarray(0, 120)}`);
      }
      await sleep(2000);
    }
  }

  async function slowClient(index) {
    await sleep(index * 50);
    while (running()) {
      await new Promise((resolve) => {
        const socket = net.connect(port, '127.0.0.1');
        let timer = null;
        const end = () => { clearInterval(timer); socket.destroy(); resolve(); };
        socket.on('connect', () => {
          socket.write('GET /v2/health/live HTTP/1.1\r\nX-Slow: ');
          timer = setInterval(() => { if (!running()) return end(); socket.write('a'); }, 2000);
        });
        socket.on('data', (chunk) => { if (/^HTTP\/1\.1 (408|429)/.test(chunk.toString('latin1'))) ++counts.slow_dropped; });
        socket.on('error', end);
        socket.on('close', end);
      });
    }
  }

  async function floods() {
    while (running()) {
      const sentAt = Date.now();
      const results = await Promise.all(Array.from({ length: 100 }, () =>
        rawExchange(port, 'GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 30000)));
      for (const result of results) {
        if (result.status === 200) ++counts.flood_ok;
        else if (result.status === 429 || result.status === 503) ++counts.flood_429;
        else if (before(sentAt)) fail(`flood: ${result.status || result.error}`);
        else ++counts.after_signal;
      }
      await sleep(1000);
    }
  }

  async function attacker() {
    while (running()) {
      const attack = attacks[Math.floor(random() * attacks.length)];
      const sentAt = Date.now();
      const result = await rawExchange(port, attack.bytes, 30000);
      if (result.status === attack.status || result.status === 429 || result.status === 503) ++counts.attacks;
      else if (before(sentAt)) fail(`attack '${attack.name}': ${result.status || result.error}`);
      else ++counts.after_signal;
      await sleep(200);
    }
  }

  async function prober() {
    while (running()) {
      const sentAt = Date.now();
      const result = await rawExchange(port, 'GET /v2/health/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 30000);
      probeWorstMs = Math.max(probeWorstMs, Date.now() - sentAt);
      if (result.status === 200 || result.status === 429 || result.status === 503) ++counts.probes;
      else if (before(sentAt)) fail(`probe: ${result.status || result.error}`);
      await sleep(500);
    }
  }

  const sampler = setInterval(() => { try { rssPeak = Math.max(rssPeak, server.rssKiB()); } catch (error) { /* exited */ } }, 250);
  const loops = [
    ...Array.from({ length: 16 }, (_, index) => keepAliveClient(index)),
    ...Array.from({ length: 40 }, (_, index) => slowClient(index)),
    floods(), attacker(), prober(),
  ];
  await sleep(Math.max(0, signalAt - Date.now()));
  const stopped = server.stop(20000);
  const signalled = Date.now();
  const { code, signal } = await stopped;
  const exitSeconds = (Date.now() - signalled) / 1000;
  clearInterval(sampler);
  await Promise.all(loops);
  agent.destroy();
  console.log(`hostile_load_test: ${JSON.stringify(counts)}; probe worst ${probeWorstMs} ms; RSS ${rssStart} -> peak ` +
              `${rssPeak} KiB; SIGTERM at +${((signalAt - start) / 1000).toFixed(1)} s, exit ${code}${signal ? ' ' + signal : ''} ` +
              `${exitSeconds.toFixed(1)} s after it`);
  for (const problem of problems) console.log(`  ${problem}`);
  const failed = counts.failures > 0 || code !== 0 || exitSeconds > 10 || rssPeak > 1.5 * rssStart ||
                 counts.valid === 0 || counts.attacks === 0 || counts.probes === 0 || counts.slow_dropped === 0;
  console.log(failed ? 'hostile_load_test: FAILED' : 'hostile_load_test: passed');
  process.exit(failed ? 1 : 0);
}

main().catch((error) => { console.error(error); process.exit(1); });
