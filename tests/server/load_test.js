// Bounded load on `qdqrt serve` over loopback: 32 keep-alive connections for DURATION seconds
// (and at most MAX_REQUESTS requests), 70% valid binary requests whose outputs must equal the
// ones served when idle, bit for bit, 30% invalid ones (malformed JSON, wrong shape, wrong dtype,
// unknown model, oversized body) that must get a 4xx with {"error"}. Passes with 0 server errors,
// 0 lost or mismatched responses and a flat resident size.
// Usage: node load_test.js QDQRT MODEL.onnx [DURATION_SECONDS=10] [MAX_REQUESTS=200000]
'use strict';
const http = require('http');
const { startServe, randomImages, binaryInferRequest, binaryOutput } = require('./serve_process');

const [binary, model, durationText = '10', maxText = '200000'] = process.argv.slice(2);
const durationMs = Number(durationText) * 1000;
const maxRequests = Number(maxText);
const connections = 32;

function send(agent, port, { method = 'POST', path, body, headers }) {
  return new Promise((resolve) => {
    const request = http.request({ host: '127.0.0.1', port, method, path, headers, agent, timeout: 30000 }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => resolve({ response, body: Buffer.concat(chunks) }));
      response.on('error', (error) => resolve({ error }));
    });
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', (error) => resolve({ error }));
    request.end(body);
  });
}

async function main() {
  const server = await startServe(binary, [`--model=fmnist=${model}`, '--maxBatch=8', '--maxBodyBytes=1048576',
                                           '--httpThreads=40']);
  const port = server.ports.http;
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  // A pool of valid requests and their outputs, served one at a time on an idle server.
  const pool = [];
  for (let index = 0; index < 8; ++index) {
    const batch = 1 + (index % 3);
    const request = binaryInferRequest(randomImages(batch, 500 + index), batch);
    const { response, body } = await send(agent, port, { path: '/v2/models/fmnist/infer', ...request });
    if (response.statusCode !== 200) throw new Error(`warm-up request failed: ${response.statusCode} ${body}`);
    pool.push({ request, expected: Buffer.from(binaryOutput(response, body)) });
  }
  const json = { 'Content-Type': 'application/json' };
  const valid = { inputs: [{ name: 'input', shape: [1, 1, 28, 28], datatype: 'FP32', data: new Array(784).fill(0.5) }] };
  const invalid = [
    { path: '/v2/models/fmnist/infer', body: '{"inputs": [', headers: json, status: 400 },
    { path: '/v2/models/fmnist/infer', body: JSON.stringify({ inputs: [{ name: 'input', shape: [1, 28, 28], datatype: 'FP32', data: new Array(784).fill(0) }] }), headers: json, status: 400 },
    { path: '/v2/models/fmnist/infer', body: JSON.stringify({ inputs: [{ name: 'input', shape: [1, 1, 28, 28], datatype: 'INT32', data: new Array(784).fill(1) }] }), headers: json, status: 400 },
    { path: '/v2/models/nope/infer', body: JSON.stringify(valid), headers: json, status: 404 },
    { path: '/v2/models/fmnist/infer', body: Buffer.alloc(2 << 20, 32), headers: json, status: 413 },
    { method: 'GET', path: '/v2/models/fmnist/versions/3', headers: {}, status: 404 },
  ];
  const counts = { valid: 0, invalid: 0, mismatched: 0, server_errors: 0, lost: 0, wrong_status: 0 };
  const firstProblems = [];
  const note = (text) => { if (firstProblems.length < 5) firstProblems.push(text); };
  const start = Date.now();
  let rssStart = 0;
  let sent = 0;
  let seed = 12345;
  const next = () => { seed = (seed * 1103515245 + 12345) >>> 0; return seed; };
  async function connectionLoop() {
    while (Date.now() - start < durationMs && sent < maxRequests) {
      ++sent;
      const pick = next() % 100;
      if (pick < 70) {
        const item = pool[next() % pool.length];
        const { error, response, body } = await send(agent, port, { path: '/v2/models/fmnist/infer', ...item.request });
        if (error) { ++counts.lost; note(`valid: ${error.message}`); continue; }
        if (response.statusCode >= 500) { ++counts.server_errors; note(`valid: ${response.statusCode} ${body}`); continue; }
        if (response.statusCode !== 200) { ++counts.wrong_status; note(`valid: ${response.statusCode} ${body}`); continue; }
        if (!binaryOutput(response, body).equals(item.expected)) { ++counts.mismatched; continue; }
        ++counts.valid;
      } else {
        const item = invalid[next() % invalid.length];
        const { error, response, body } = await send(agent, port, item);
        if (error) { ++counts.lost; note(`invalid ${item.path}: ${error.message}`); continue; }
        if (response.statusCode >= 500) { ++counts.server_errors; note(`invalid: ${response.statusCode} ${body}`); continue; }
        let message;
        try { message = JSON.parse(body.toString()).error; } catch (e) { message = undefined; }
        if (response.statusCode !== item.status || typeof message !== 'string') {
          ++counts.wrong_status; note(`invalid ${item.path}: ${response.statusCode} ${body.subarray(0, 200)}`); continue;
        }
        ++counts.invalid;
      }
      if (!rssStart && Date.now() - start > durationMs / 4) rssStart = server.rssKiB();
    }
  }
  await Promise.all(Array.from({ length: connections }, connectionLoop));
  const seconds = (Date.now() - start) / 1000;
  const rssEnd = server.rssKiB();
  agent.destroy();
  const { code } = await server.stop();
  const growthKiB = rssEnd - (rssStart || rssEnd);
  console.log(`load_test: ${sent} requests in ${seconds.toFixed(1)} s (${(sent / seconds).toFixed(0)}/s) over ${connections} connections: ` +
              `${counts.valid} valid ok, ${counts.invalid} invalid answered 4xx, ${counts.mismatched} mismatched, ` +
              `${counts.server_errors} server errors, ${counts.lost} lost, ${counts.wrong_status} wrong status; ` +
              `RSS ${rssStart} -> ${rssEnd} KiB; exit ${code}`);
  for (const problem of firstProblems) console.log(`  ${problem}`);
  // Allocator arenas settle in the first quarter; past it the resident size must stay flat.
  const failed = counts.mismatched + counts.server_errors + counts.lost + counts.wrong_status > 0 ||
                 growthKiB > 16 * 1024 || code !== 0 || counts.valid === 0;
  console.log(failed ? 'load_test: FAILED' : 'load_test: passed');
  process.exit(failed ? 1 : 0);
}

main().catch((error) => { console.error(error); process.exit(1); });
