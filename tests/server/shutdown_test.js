// SIGTERM under load: 16 keep-alive clients send valid requests to `qdqrt serve`; after 1.5 s
// the server gets SIGTERM. Every request sent before the signal must be answered (200, or 503
// "shutting down"), the server must exit 0, and requests sent after it may only be refused at
// the connection. Bounded: each client stops after 2000 requests, or 10 s, or its first refusal.
// Usage: node shutdown_test.js QDQRT MODEL.onnx
'use strict';
const http = require('http');
const { startServe, randomImages, binaryInferRequest } = require('./serve_process');

const [binary, model] = process.argv.slice(2);

function send(agent, port, request) {
  return new Promise((resolve) => {
    const sentAt = Date.now();
    const call = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v2/models/fmnist/infer',
                                headers: request.headers, agent, timeout: 30000 }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => resolve({ sentAt, status: response.statusCode, body: Buffer.concat(chunks) }));
      response.on('error', (error) => resolve({ sentAt, error }));
    });
    call.on('timeout', () => call.destroy(new Error('timeout')));
    call.on('error', (error) => resolve({ sentAt, error }));
    call.end(request.body);
  });
}

async function main() {
  const server = await startServe(binary, [`--model=fmnist=${model}`, '--maxBatch=8']);
  const port = server.ports.http;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  const request = binaryInferRequest(randomImages(2, 3), 2);
  let signalAt = Infinity;
  const counts = { answered_before: 0, unanswered_before: 0, answered_after: 0, refused_after: 0, bad_status: 0 };
  const problems = [];
  const start = Date.now();
  async function client() {
    for (let index = 0; index < 2000 && Date.now() - start < 10000; ++index) {
      const result = await send(agent, port, request);
      const before = result.sentAt < signalAt;
      if (result.error) {
        if (before) { ++counts.unanswered_before; problems.push(`${result.error.code || result.error.message} at +${result.sentAt - start} ms`); } else { ++counts.refused_after; }
        if (!before) return;
        continue;
      }
      if (result.status !== 200 && !(result.status === 503 && /shutting down/.test(result.body))) {
        ++counts.bad_status;
        problems.push(`${result.status} ${result.body.subarray(0, 200)}`);
      }
      if (before) ++counts.answered_before; else ++counts.answered_after;
    }
  }
  const clients = Array.from({ length: 16 }, client);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  signalAt = Date.now();
  const stopped = server.stop();
  await Promise.all(clients);
  const { code, signal } = await stopped;
  agent.destroy();
  console.log(`shutdown_test: ${JSON.stringify(counts)}; server exit ${code}${signal ? ' ' + signal : ''} ` +
              `${((Date.now() - signalAt) / 1000).toFixed(1)} s after SIGTERM`);
  for (const problem of problems.slice(0, 5)) console.log(`  ${problem}`);
  const failed = code !== 0 || counts.unanswered_before > 0 || counts.bad_status > 0 || counts.answered_before === 0;
  console.log(failed ? 'shutdown_test: FAILED' : 'shutdown_test: passed');
  process.exit(failed ? 1 : 0);
}

main().catch((error) => { console.error(error); process.exit(1); });
