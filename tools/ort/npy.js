// Minimal NumPy .npy (format 1.0/2.0/3.0) reader and writer for the dtypes the oracle needs.
'use strict';
const fs = require('fs');

// numpy descr (without byte-order char) <-> ONNX Runtime tensor type and typed array.
const DTYPES = [
  { descr: 'f4', ort: 'float32', array: Float32Array },
  { descr: 'f8', ort: 'float64', array: Float64Array },
  { descr: 'i8', ort: 'int64', array: BigInt64Array },
  { descr: 'i4', ort: 'int32', array: Int32Array },
  { descr: 'i2', ort: 'int16', array: Int16Array },
  { descr: 'u1', ort: 'uint8', array: Uint8Array },
  { descr: 'i1', ort: 'int8', array: Int8Array },
  { descr: 'b1', ort: 'bool', array: Uint8Array },
];

const MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]);  // "\x93NUMPY"

function dtypeByDescr(descr, path) {
  // Byte order: '<' little, '|' not applicable, '=' native (x86: little), '>' big (refused).
  const order = '<>|='.includes(descr[0]) ? descr[0] : '=';
  const base = order === descr[0] ? descr.slice(1) : descr;
  const found = DTYPES.find((d) => d.descr === base);
  if (!found) throw new Error(`${path}: unsupported dtype '${descr}'`);
  if (order === '>' && found.array.BYTES_PER_ELEMENT > 1) {
    throw new Error(`${path}: big-endian dtype '${descr}' is not supported`);
  }
  return found;
}

function parseHeader(header, path) {
  const descr = /'descr'\s*:\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) throw new Error(`${path}: malformed .npy header: ${header}`);
  if (fortran[1] === 'True') throw new Error(`${path}: fortran_order arrays are not supported`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  return { descr: descr[1], dims };
}

// Returns { type: ORT type string, dims: number[], data: TypedArray }.
function readNpy(path) {
  const bytes = fs.readFileSync(path);
  if (bytes.length < 10 || !bytes.subarray(0, 6).equals(MAGIC)) throw new Error(`${path}: not a .npy file`);
  const major = bytes[6];
  const headerLength = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const headerStart = major === 1 ? 10 : 12;
  const header = bytes.toString(major === 3 ? 'utf8' : 'latin1', headerStart, headerStart + headerLength);
  const { descr, dims } = parseHeader(header, path);
  const dtype = dtypeByDescr(descr, path);
  const count = dims.reduce((a, b) => a * b, 1);
  const dataStart = headerStart + headerLength;
  const byteLength = count * dtype.array.BYTES_PER_ELEMENT;
  if (bytes.length - dataStart < byteLength) {
    throw new Error(`${path}: expected ${byteLength} data bytes for shape [${dims}], found ${bytes.length - dataStart}`);
  }
  // Copy into a fresh, aligned buffer (the file buffer's offset may not be element aligned).
  const data = new dtype.array(count);
  Buffer.from(data.buffer).set(bytes.subarray(dataStart, dataStart + byteLength));
  return { type: dtype.ort, dims, data };
}

function writeNpy(path, type, dims, data) {
  const dtype = DTYPES.find((d) => d.ort === type);
  if (!dtype) throw new Error(`${path}: cannot write tensor type '${type}'`);
  const order = dtype.array.BYTES_PER_ELEMENT === 1 ? '|' : '<';
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${order}${dtype.descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // Pad so that magic + version + length + header + '\n' is a multiple of 64 bytes.
  const unpadded = MAGIC.length + 2 + 2 + header.length + 1;
  header += ' '.repeat((64 - (unpadded % 64)) % 64) + '\n';
  const prefix = Buffer.alloc(10);
  MAGIC.copy(prefix, 0);
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(path, Buffer.concat([prefix, Buffer.from(header, 'latin1'), body]));
}

module.exports = { readNpy, writeNpy };
