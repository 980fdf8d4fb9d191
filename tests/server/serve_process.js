// Starts `qdqrt serve` on 127.0.0.1 with OS-chosen ports (read back from --portFile) and stops it
// with SIGTERM. Shared by the Node tests and bench/serve.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

async function startServe(binary, extraArgs, { timeoutMs = 120000 } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qdqrt_serve_'));
  const portFile = path.join(dir, 'ports');
  const args = ['serve', '--host=127.0.0.1', '--httpPort=0', '--grpcPort=0', '--metricsPort=0',
                `--portFile=${portFile}`, `--engineCacheDir=${path.join(dir, 'cache')}`, ...extraArgs];
  const child = spawn(binary, args, { stdio: ['ignore', 'inherit', 'pipe'] });
  let log = '';
  child.stderr.on('data', (chunk) => { log += chunk; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const deadline = Date.now() + timeoutMs;
  while (!fs.existsSync(portFile)) {
    if (child.exitCode !== null) throw new Error(`qdqrt serve exited early (${child.exitCode}):\n${log}`);
    if (Date.now() > deadline) { child.kill('SIGKILL'); throw new Error(`qdqrt serve not ready after ${timeoutMs} ms:\n${log}`); }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const ports = Object.fromEntries(fs.readFileSync(portFile, 'utf8').trim().split('\n').map((line) => {
    const [key, value] = line.split('=');
    return [key, Number(value)];
  }));
  return {
    child, ports, exited,
    log: () => log,
    rssKiB() {
      const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
    },
    // SIGTERM, then the exit code (SIGKILL and a failure if it takes longer than timeoutMs).
    async stop(stopTimeoutMs = 30000) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs);
      const result = await exited;
      clearTimeout(timer);
      fs.rmSync(dir, { recursive: true, force: true });
      return result;
    },
  };
}

// A seeded random FP32 image batch [batch, 1, 28, 28] as a Buffer.
function randomImages(batch, seed) {
  const values = new Float32Array(batch * 784);
  let state = seed >>> 0 || 1;
  for (let i = 0; i < values.length; ++i) {
    state = (state * 1664525 + 1013904223) >>> 0;
    values[i] = state / 2147483648 - 1;
  }
  return Buffer.from(values.buffer);
}

// Body and headers of a binary-extension infer request for fmnist (binary output too).
function binaryInferRequest(images, batch) {
  const header = JSON.stringify({
    inputs: [{ name: 'input', shape: [batch, 1, 28, 28], datatype: 'FP32', parameters: { binary_data_size: images.length } }],
    outputs: [{ name: 'output', parameters: { binary_data: true } }],
  });
  return {
    body: Buffer.concat([Buffer.from(header), images]),
    headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(Buffer.byteLength(header)) },
  };
}

function binaryOutput(response, body) {
  const headerLength = Number(response.headers['inference-header-content-length']);
  return body.subarray(headerLength);
}

module.exports = { startServe, randomImages, binaryInferRequest, binaryOutput };
