// A real gRPC client (@grpc/grpc-js + @grpc/proto-loader on server/grpc_predict_v2.proto) against
// `qdqrt serve`: health, metadata, ModelInfer with raw and typed contents, protocol errors,
// repository, statistics, model configuration and system shared memory.
// Its results must equal, bit for bit, the HTTP binary path's (which tests/server/server_test.cpp
// checks against a direct ExecutionContext::run). Usage: node grpc_client_test.js QDQRT MODEL.onnx
'use strict';
const assert = require('assert');
const fs = require('fs');
const http = require('http');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const { startServe, randomImages, binaryInferRequest, binaryOutput } = require('./serve_process');

const [binary, model] = process.argv.slice(2);
const protoPath = path.join(__dirname, '..', '..', 'server', 'grpc_predict_v2.proto');

function call(client, method, request) {
  return new Promise((resolve) => {
    client[method](request, { deadline: Date.now() + 30000 }, (error, response) => resolve({ error, response }));
  });
}

function httpInfer(port, images, batch) {
  const { body, headers } = binaryInferRequest(images, batch);
  return new Promise((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v2/models/fmnist/infer', headers }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => resolve(binaryOutput(response, Buffer.concat(chunks))));
    });
    request.on('error', reject);
    request.end(body);
  });
}

async function main() {
  const server = await startServe(binary, [`--model=fmnist=${model}`, '--maxBatch=8']);
  let failed = false;
  try {
    const definition = protoLoader.loadSync(protoPath, { keepCase: true, longs: Number, defaults: true });
    const inference = grpc.loadPackageDefinition(definition).inference;
    const client = new inference.GRPCInferenceService(`127.0.0.1:${server.ports.grpc}`, grpc.credentials.createInsecure());

    assert.strictEqual((await call(client, 'ServerLive', {})).response.live, true);
    assert.strictEqual((await call(client, 'ServerReady', {})).response.ready, true);
    assert.strictEqual((await call(client, 'ServerMetadata', {})).response.name, 'qdqrt');
    assert.strictEqual((await call(client, 'ModelReady', { name: 'fmnist' })).response.ready, true);
    const metadata = (await call(client, 'ModelMetadata', { name: 'fmnist' })).response;
    assert.deepStrictEqual(metadata.inputs.map((t) => [t.name, t.datatype, t.shape]), [['input', 'FP32', [-1, 1, 28, 28]]]);
    assert.deepStrictEqual(metadata.outputs.map((t) => [t.name, t.datatype, t.shape]), [['output', 'FP32', [-1, 10]]]);

    for (const batch of [1, 4, 8]) {
      const images = randomImages(batch, 11 + batch);
      const expected = await httpInfer(server.ports.http, images, batch);
      const raw = await call(client, 'ModelInfer', {
        model_name: 'fmnist', id: `raw-${batch}`,
        inputs: [{ name: 'input', datatype: 'FP32', shape: [batch, 1, 28, 28] }],
        raw_input_contents: [images],
      });
      assert.ifError(raw.error);
      assert.strictEqual(raw.response.id, `raw-${batch}`);
      assert.deepStrictEqual(raw.response.outputs[0].shape, [batch, 10]);
      assert.ok(raw.response.raw_output_contents[0].equals(expected), `raw gRPC differs from HTTP at batch ${batch}`);
      const typed = await call(client, 'ModelInfer', {
        model_name: 'fmnist',
        inputs: [{ name: 'input', datatype: 'FP32', shape: [batch, 1, 28, 28],
                   contents: { fp32_contents: Array.from(new Float32Array(images.buffer, images.byteOffset, images.length / 4)) } }],
      });
      assert.ifError(typed.error);
      assert.ok(typed.response.raw_output_contents[0].equals(expected), `typed gRPC differs from HTTP at batch ${batch}`);
    }

    const images = randomImages(1, 5);
    const errors = [
      [{ model_name: 'nope', inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 1, 28, 28] }], raw_input_contents: [images] }, grpc.status.NOT_FOUND],
      [{ model_name: 'fmnist', model_version: '9', inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 1, 28, 28] }], raw_input_contents: [images] }, grpc.status.NOT_FOUND],
      [{ model_name: 'fmnist', inputs: [{ name: 'input', datatype: 'INT8', shape: [1, 1, 28, 28] }], raw_input_contents: [images] }, grpc.status.INVALID_ARGUMENT],
      [{ model_name: 'fmnist', inputs: [{ name: 'input', datatype: 'FP32', shape: [2, 1, 28, 28] }], raw_input_contents: [images] }, grpc.status.INVALID_ARGUMENT],
      [{ model_name: 'fmnist', inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 1, 28, 28] }], raw_input_contents: [images] }, grpc.status.INVALID_ARGUMENT],
      [{ model_name: 'fmnist', inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 1, 28, 28] }] }, grpc.status.INVALID_ARGUMENT],
      [{ model_name: 'fmnist', inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 1, 28, 28] }], raw_input_contents: [images],
         outputs: [{ name: 'probabilities' }] }, grpc.status.INVALID_ARGUMENT],
    ];
    for (const [request, code] of errors) {
      const { error } = await call(client, 'ModelInfer', request);
      assert.ok(error, `no error for ${JSON.stringify(request.inputs)}`);
      assert.strictEqual(error.code, code, `${error.details} (code ${error.code}, wanted ${code})`);
      assert.ok(error.details.length > 0);
    }
    // Still serving.
    const again = await call(client, 'ModelInfer', {
      model_name: 'fmnist', inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 1, 28, 28] }], raw_input_contents: [images] });
    assert.ifError(again.error);
    // Repository and statistics: every other method of the service.
    const index = (await call(client, 'RepositoryIndex', {})).response;
    assert.deepStrictEqual(index.models.map((model) => [model.name, model.state]), [['fmnist', 'READY']]);
    assert.strictEqual((await call(client, 'RepositoryModelLoad', { model_name: '../../etc' })).error.code, grpc.status.NOT_FOUND);
    assert.ifError((await call(client, 'RepositoryModelUnload', { model_name: 'fmnist' })).error);
    assert.strictEqual((await call(client, 'ModelReady', { name: 'fmnist' })).response.ready, false);
    assert.ifError((await call(client, 'RepositoryModelLoad', { model_name: 'fmnist' })).error);
    assert.strictEqual((await call(client, 'ServerReady', {})).response.ready, true);
    const successes = async () => Number((await call(client, 'ModelStatistics', { name: 'fmnist' })).response
      .model_stats[0].inference_stats.success.count);
    const before = await successes();
    await call(client, 'ModelInfer', {
      model_name: 'fmnist', inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 1, 28, 28] }], raw_input_contents: [images] });
    assert.strictEqual(await successes(), before + 1);
    const statistics = (await call(client, 'ModelStatistics', {})).response.model_stats;
    assert.strictEqual(statistics.length, 1);
    assert.strictEqual(statistics[0].name, 'fmnist');
    assert.ok(Number(statistics[0].inference_stats.compute_infer.ns) > 0);
    assert.strictEqual(Number(statistics[0].batch_stats[0].batch_size), 1);
    assert.strictEqual((await call(client, 'ModelStatistics', { name: 'nope' })).error.code, grpc.status.NOT_FOUND);
    assert.ok((await call(client, 'ServerMetadata', {})).response.extensions.includes('statistics'));
    const config = (await call(client, 'ModelConfig', { name: 'fmnist' })).response.config;
    assert.strictEqual(config.max_batch_size, 8);
    assert.strictEqual(config.input[0].data_type, 11);  // TYPE_FP32 (enums as numbers here)
    assert.deepStrictEqual(config.input[0].dims.map(Number), [1, 28, 28]);

    // System shared memory: POSIX objects are files under /dev/shm on Linux, so the client writes
    // the input there and reads the output back from its own object.
    assert.ok((await call(client, 'ServerMetadata', {})).response.extensions.includes('system_shared_memory'));
    const inputKey = `qdqrt_grpc_test_in_${process.pid}`, outputKey = `qdqrt_grpc_test_out_${process.pid}`;
    const shmImages = randomImages(2, 23);
    const shmExpected = await httpInfer(server.ports.http, shmImages, 2);
    fs.writeFileSync(`/dev/shm/${inputKey}`, Buffer.concat([Buffer.alloc(64), shmImages]));
    fs.writeFileSync(`/dev/shm/${outputKey}`, Buffer.alloc(shmExpected.length));
    try {
      assert.ifError((await call(client, 'SystemSharedMemoryRegister',
        { name: 'in', key: `/${inputKey}`, offset: 64, byte_size: shmImages.length })).error);
      assert.ifError((await call(client, 'SystemSharedMemoryRegister',
        { name: 'out', key: `/${outputKey}`, offset: 0, byte_size: shmExpected.length })).error);
      const past = await call(client, 'SystemSharedMemoryRegister',
        { name: 'past', key: `/${outputKey}`, offset: 8, byte_size: shmExpected.length });
      assert.strictEqual(past.error.code, grpc.status.INVALID_ARGUMENT, 'a window past the object is refused');
      const regions = (await call(client, 'SystemSharedMemoryStatus', {})).response.regions;
      assert.deepStrictEqual(Object.keys(regions).sort(), ['in', 'out']);
      assert.strictEqual(Number(regions.in.offset), 64);
      const region = (name, bytes) => ({ shared_memory_region: { string_param: name },
                                         shared_memory_byte_size: { int64_param: bytes } });
      const shm = await call(client, 'ModelInfer', {
        model_name: 'fmnist',
        inputs: [{ name: 'input', datatype: 'FP32', shape: [2, 1, 28, 28], parameters: region('in', shmImages.length) }],
        outputs: [{ name: 'output', parameters: region('out', shmExpected.length) }],
      });
      assert.ifError(shm.error);
      assert.ok(fs.readFileSync(`/dev/shm/${outputKey}`).equals(shmExpected), 'shared-memory output differs from HTTP');
      const tooSmall = await call(client, 'ModelInfer', {
        model_name: 'fmnist',
        inputs: [{ name: 'input', datatype: 'FP32', shape: [2, 1, 28, 28], parameters: region('in', shmImages.length) }],
        outputs: [{ name: 'output', parameters: region('out', 4) }],
      });
      assert.strictEqual(tooSmall.error.code, grpc.status.INVALID_ARGUMENT, 'an output window too small is refused');
      assert.ifError((await call(client, 'SystemSharedMemoryUnregister', { name: 'in' })).error);
      assert.deepStrictEqual(Object.keys((await call(client, 'SystemSharedMemoryStatus', {})).response.regions), ['out']);
      assert.ifError((await call(client, 'SystemSharedMemoryUnregister', {})).error);
      assert.deepStrictEqual(Object.keys((await call(client, 'SystemSharedMemoryStatus', {})).response.regions), []);
    } finally {
      fs.rmSync(`/dev/shm/${inputKey}`, { force: true });
      fs.rmSync(`/dev/shm/${outputKey}`, { force: true });
    }
    client.close();
  } catch (error) {
    failed = true;
    console.error(error);
    console.error(server.log());
  }
  const { code } = await server.stop();
  if (code !== 0) { failed = true; console.error(`qdqrt serve exited with ${code}`); }
  console.log(failed ? 'grpc_client_test: FAILED' : 'grpc_client_test: passed');
  process.exit(failed ? 1 : 0);
}

main();
