#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (CPU) on .npy inputs and writes its outputs as .npy:
// the independent oracle for qdqrt's whole-model tests, and the peer for latency comparisons.
//
//   node run_ort.js --model m.onnx --inputs DIR [--outputs DIR] [--threads N] [--iterations N]
//                   [--optimization disabled|basic|extended|all]
//
// Every DIR/<name>.npy whose <name> is a model input is fed; a missing input is an error.
// With --iterations N > 1 the model runs N times (after one warm-up run) and a JSON line with
// the median latency in ms is printed on stdout.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { readNpy, writeNpy } = require('./npy');

const USAGE = 'usage: node run_ort.js --model m.onnx --inputs DIR [--outputs DIR] [--threads N] ' +
  '[--iterations N] [--optimization disabled|basic|extended|all]';
const OPTIMIZATION_LEVELS = ['disabled', 'basic', 'extended', 'all'];

function parseArgs(argv) {
  const options = { threads: 1, iterations: 1, optimization: 'all' };
  const numeric = new Set(['threads', 'iterations']);
  const known = new Set(['model', 'inputs', 'outputs', 'threads', 'iterations', 'optimization']);
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    if (arg === '-h' || arg === '--help') {
      console.log(USAGE);
      process.exit(0);
    }
    if (!arg.startsWith('--')) throw new Error(`unexpected argument '${arg}'\n${USAGE}`);
    arg = arg.slice(2);
    let value;
    const eq = arg.indexOf('=');
    if (eq >= 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    } else {
      value = argv[++i];
    }
    if (!known.has(arg)) throw new Error(`unknown option '--${arg}'\n${USAGE}`);
    if (value === undefined) throw new Error(`option '--${arg}' needs a value`);
    if (numeric.has(arg)) {
      const number = Number(value);
      if (!Number.isInteger(number) || number < 1) throw new Error(`--${arg} must be a positive integer, got '${value}'`);
      options[arg] = number;
    } else {
      options[arg] = value;
    }
  }
  if (!options.model || !options.inputs) throw new Error(USAGE);
  if (!OPTIMIZATION_LEVELS.includes(options.optimization)) {
    throw new Error(`--optimization must be one of ${OPTIMIZATION_LEVELS.join('|')}, got '${options.optimization}'`);
  }
  return options;
}

function loadInputs(session, directory) {
  const feeds = {};
  for (const name of session.inputNames) {
    const file = path.join(directory, `${name}.npy`);
    if (!fs.existsSync(file)) throw new Error(`no input file for model input '${name}': ${file} does not exist`);
    const { type, dims, data } = readNpy(file);
    feeds[name] = new ort.Tensor(type, data, dims);
  }
  return feeds;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const session = await ort.InferenceSession.create(options.model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: options.optimization,
    intraOpNumThreads: options.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  const feeds = loadInputs(session, options.inputs);

  let results = await session.run(feeds);
  if (options.iterations > 1) {
    const times = [];
    for (let i = 0; i < options.iterations; i++) {
      const start = process.hrtime.bigint();
      results = await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    console.log(JSON.stringify({
      model: options.model,
      threads: options.threads,
      optimization: options.optimization,
      iterations: options.iterations,
      median_ms: median(times),
      min_ms: Math.min(...times),
      mean_ms: times.reduce((a, b) => a + b, 0) / times.length,
    }));
  }

  if (options.outputs) {
    fs.mkdirSync(options.outputs, { recursive: true });
    for (const name of session.outputNames) {
      const tensor = results[name];
      writeNpy(path.join(options.outputs, `${name}.npy`), tensor.type, tensor.dims, tensor.data);
    }
  }
}

main().catch((error) => {
  console.error(`run_ort: ${error.message}`);
  process.exit(1);
});
