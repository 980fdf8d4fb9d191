#!/usr/bin/env node
// Times an ONNX model with ONNX Runtime (CPU) the way `qdqrt exec` / trtexec time an engine:
// random inputs of the given shapes, a time-based warm-up, then at least --iterations runs
// and at least --duration seconds. Prints one JSON line on stdout:
//   {"median_ms":..,"mean_ms":..,"min_ms":..,"max_ms":..,"p90_ms":..,"iterations":..,
//    "cpu_ms_per_iteration":..,...}
//
//   node bench_ort.js --model m.onnx [--shapes name:1x3x224x224[,name2:...]] [--threads N]
//                     [--warmUp MS] [--iterations N] [--duration S]
//                     [--optimization disabled|basic|extended|all]
//
// The session uses intraOpNumThreads = --threads, interOpNumThreads = 1, sequential execution
// and graph optimization level "all" (ORT's default and best). Inputs without --shapes use the
// model's declared shape, which must then be fully static.
'use strict';
const ort = require('onnxruntime-node');

const USAGE = 'usage: node bench_ort.js --model m.onnx [--shapes name:1x3x224x224[,...]] [--threads N] ' +
  '[--warmUp MS] [--iterations N] [--duration S] [--optimization disabled|basic|extended|all]';
const OPTIMIZATION_LEVELS = ['disabled', 'basic', 'extended', 'all'];

function parseShapes(text) {
  const shapes = {};
  for (const entry of text.split(',')) {
    // The name may itself contain ':' (e.g. "input:0"), so split at the last one.
    const colon = entry.lastIndexOf(':');
    if (colon <= 0) throw new Error(`--shapes entry '${entry}' is not name:DxDx...`);
    const name = entry.slice(0, colon);
    const dims = entry.slice(colon + 1).split('x').map(Number);
    if (dims.some((d) => !Number.isInteger(d) || d < 1)) {
      throw new Error(`--shapes entry '${entry}': dimensions must be positive integers`);
    }
    shapes[name] = dims;
  }
  return shapes;
}

function parseArgs(argv) {
  const options = {
    threads: 1, warmUp: 500, iterations: 10, duration: 3, optimization: 'all', shapes: {},
  };
  const integers = new Set(['threads', 'iterations']);
  const numbers = new Set(['warmUp', 'duration']);
  const known = new Set(['model', 'onnx', 'shapes', 'threads', 'warmUp', 'iterations', 'duration', 'optimization']);
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
    if (arg === 'onnx') arg = 'model';  // trtexec's spelling
    if (integers.has(arg)) {
      const number = Number(value);
      if (!Number.isInteger(number) || number < 1) throw new Error(`--${arg} must be a positive integer, got '${value}'`);
      options[arg] = number;
    } else if (numbers.has(arg)) {
      const number = Number(value);
      if (!Number.isFinite(number) || number < 0) throw new Error(`--${arg} must be a non-negative number, got '${value}'`);
      options[arg] = number;
    } else if (arg === 'shapes') {
      Object.assign(options.shapes, parseShapes(value));
    } else {
      options[arg] = value;
    }
  }
  if (!options.model) throw new Error(USAGE);
  if (!OPTIMIZATION_LEVELS.includes(options.optimization)) {
    throw new Error(`--optimization must be one of ${OPTIMIZATION_LEVELS.join('|')}, got '${options.optimization}'`);
  }
  return options;
}

// Deterministic pseudo-random numbers (xorshift32), so every run feeds the same data.
function makeRandom(seed) {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 4294967296;
  };
}

const TYPED_ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, int64: BigInt64Array, bool: Uint8Array,
};

function randomTensor(type, dims, random) {
  const ArrayType = TYPED_ARRAYS[type];
  if (!ArrayType) throw new Error(`input type '${type}' is not supported`);
  const count = dims.reduce((a, b) => a * b, 1);
  const data = new ArrayType(count);
  for (let i = 0; i < count; i++) {
    if (type === 'float32' || type === 'float64') data[i] = random() * 2 - 1;
    else if (type === 'int64') data[i] = BigInt(Math.floor(random() * 16));
    else if (type === 'bool') data[i] = random() < 0.5 ? 1 : 0;
    else data[i] = Math.floor(random() * 16);
  }
  return new ort.Tensor(type, data, dims);
}

function makeFeeds(session, shapes) {
  const random = makeRandom(12345);
  const feeds = {};
  const unused = new Set(Object.keys(shapes));
  for (const meta of session.inputMetadata) {
    if (!meta.isTensor) throw new Error(`input '${meta.name}' is not a tensor`);
    let dims = shapes[meta.name];
    unused.delete(meta.name);
    if (dims) {
      if (meta.shape.length && meta.shape.length !== dims.length) {
        throw new Error(`--shapes ${meta.name}: rank ${dims.length} but the model declares rank ${meta.shape.length}`);
      }
      meta.shape.forEach((declared, axis) => {
        if (typeof declared === 'number' && declared > 0 && declared !== dims[axis]) {
          throw new Error(`--shapes ${meta.name}: dimension ${axis} is ${dims[axis]} but the model fixes it to ${declared}`);
        }
      });
    } else {
      if (meta.shape.some((d) => typeof d !== 'number' || d < 1)) {
        throw new Error(`input '${meta.name}' has a dynamic shape [${meta.shape.join(',')}]: give it with --shapes`);
      }
      dims = [...meta.shape];
    }
    feeds[meta.name] = randomTensor(meta.type, dims, random);
  }
  if (unused.size) throw new Error(`--shapes names no model input: ${[...unused].join(', ')}`);
  return feeds;
}

function percentile(sorted, fraction) {
  // Nearest rank, as trtexec reports percentiles.
  const rank = Math.max(1, Math.ceil(fraction * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1];
}

function summarize(times) {
  const sorted = [...times].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return {
    median_ms: sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2,
    mean_ms: times.reduce((a, b) => a + b, 0) / times.length,
    min_ms: sorted[0],
    max_ms: sorted[sorted.length - 1],
    p90_ms: percentile(sorted, 0.9),
    iterations: times.length,
  };
}

function nowMs() {
  return Number(process.hrtime.bigint()) / 1e6;
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
  const feeds = makeFeeds(session, options.shapes);

  // Warm-up: at least one run, then until --warmUp ms have passed.
  const warmStart = nowMs();
  do {
    await session.run(feeds);
  } while (nowMs() - warmStart < options.warmUp);

  const times = [];
  const cpuStart = process.cpuUsage();
  const start = nowMs();
  while (times.length < options.iterations || nowMs() - start < options.duration * 1000) {
    const begin = nowMs();
    await session.run(feeds);
    times.push(nowMs() - begin);
  }
  const walltime = (nowMs() - start) / 1000;
  const cpu = process.cpuUsage(cpuStart);
  const shapes = {};
  for (const [name, tensor] of Object.entries(feeds)) shapes[name] = tensor.dims.join('x');
  console.log(JSON.stringify({
    ...summarize(times),
    walltime_s: walltime,
    // Process CPU time (all threads, including ORT's spin-waiting) per iteration: on a loaded
    // machine, at 1 thread, close to what the run would take on an idle one.
    cpu_ms_per_iteration: (cpu.user + cpu.system) / 1000 / times.length,
    model: options.model,
    threads: options.threads,
    optimization: options.optimization,
    shapes,
    ort_version: ort.env.versions.common,
  }));
}

main().catch((error) => {
  console.error(`bench_ort: ${error.message}`);
  process.exit(1);
});
