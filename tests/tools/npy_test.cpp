#include <gtest/gtest.h>

#include <sys/stat.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "tools/npy.h"

namespace qdqrt {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed at the end.
class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / fmt::format("qdqrt_npy_{}_{}_{}", info->test_suite_name(), info->name(), getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

// Fills a tensor with a varied, dtype-exact byte pattern.
Tensor patterned_tensor(DataType dtype, Shape shape) {
  Tensor tensor(dtype, std::move(shape));
  auto* bytes = static_cast<unsigned char*>(tensor.raw_data());
  for (size_t i = 0; i < tensor.nbytes(); ++i) bytes[i] = static_cast<unsigned char>(i * 37 + 11);
  if (dtype == DataType::kBool) {
    for (size_t i = 0; i < tensor.nbytes(); ++i) bytes[i] &= 1;
  }
  return tensor;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

const DataType kNpyDtypes[] = {DataType::kFloat,  DataType::kDouble, DataType::kInt8,   DataType::kUint8,
                               DataType::kInt16,  DataType::kUint16, DataType::kInt32,  DataType::kInt64,
                               DataType::kUint32, DataType::kUint64, DataType::kBool,   DataType::kFloat16};

TEST_F(NpyTest, RoundTripsEveryDtypeAndShape) {
  const Shape shapes[] = {{}, {7}, {2, 3}, {2, 0, 4}, {1, 3, 5, 2}};
  for (DataType dtype : kNpyDtypes) {
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(fmt::format("{} {}", dtype_name(dtype), shape_to_string(shape)));
      Tensor original = patterned_tensor(dtype, shape);
      std::string file = path("t.npy");
      ASSERT_TRUE(write_npy(file, original).is_ok());
      auto loaded = read_npy(file);
      ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
      EXPECT_TRUE(same_bytes(*loaded, original));
    }
  }
}

TEST_F(NpyTest, WritesAlignedVersion1Header) {
  auto bytes = serialize_npy(Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  ASSERT_TRUE(bytes.ok());
  ASSERT_GE(bytes->size(), 10u);
  EXPECT_EQ(bytes->substr(0, 6), "\x93NUMPY");
  EXPECT_EQ((*bytes)[6], 1);
  size_t header_length = static_cast<unsigned char>((*bytes)[8]) | (static_cast<unsigned char>((*bytes)[9]) << 8);
  EXPECT_EQ((10 + header_length) % 64, 0u);
  std::string header = bytes->substr(10, header_length);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u) << header;
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(bytes->size(), 10 + header_length + 6 * sizeof(float));
}

TEST_F(NpyTest, OneDimensionalShapeHasTrailingComma) {
  auto bytes = serialize_npy(Tensor::from_vector<int64_t>({3}, {1, 2, 3}));
  ASSERT_TRUE(bytes.ok());
  EXPECT_NE(bytes->find("'shape': (3,)"), std::string::npos);
}

TEST_F(NpyTest, RejectsDtypesNpyCannotHold) {
  Tensor int4(DataType::kInt4, {4});
  Status status = write_npy(path("x.npy"), int4);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("int4"), std::string::npos) << status.message();
  EXPECT_FALSE(write_npy(path("x.npy"), Tensor()).is_ok());
}

TEST_F(NpyTest, MissingFileIsIoError) {
  auto result = read_npy(path("does_not_exist.npy"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kIoError);
  EXPECT_NE(result.status().message().find("does_not_exist.npy"), std::string::npos);
}

TEST_F(NpyTest, DirectoryIsIoError) {
  auto result = read_npy(dir_.string());
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("is a directory"), std::string::npos) << result.status().message();
}

// --loadInputs=input:/dev/zero once read until bad_alloc, and a FIFO blocked forever.
TEST_F(NpyTest, SpecialFilesAreRefusedWithoutReading) {
  auto zero = read_npy("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("not a regular file"), std::string::npos) << zero.status().message();
  ASSERT_EQ(::mkfifo(path("input.fifo").c_str(), 0600), 0);
  auto fifo = read_npy(path("input.fifo"));
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.status().message().find("FIFO, not a regular file"), std::string::npos) << fifo.status().message();
}

TEST_F(NpyTest, UnwritablePathIsIoError) {
  Status status = write_npy(path("no_such_dir/x.npy"), Tensor::scalar<float>(1.0f));
  EXPECT_EQ(status.code(), StatusCode::kIoError);
}

TEST_F(NpyTest, NonzeroBoolBytesBecomeTrue) {
  std::string header = "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header;
  bytes += std::string("\x00\x02\xff", 3);
  auto tensor = parse_npy(bytes.data(), bytes.size());
  ASSERT_TRUE(tensor.ok()) << tensor.status().to_string();
  EXPECT_EQ(static_cast<const unsigned char*>(tensor->raw_data())[0], 0);
  EXPECT_EQ(static_cast<const unsigned char*>(tensor->raw_data())[1], 1);
  EXPECT_EQ(static_cast<const unsigned char*>(tensor->raw_data())[2], 1);
}

// .npy bytes with a version-1 prefix around `header` and `data_size` zero bytes of data.
std::string npy_with_header(const std::string& header, size_t data_size, unsigned char major = 1) {
  std::string bytes("\x93NUMPY", 6);
  bytes.push_back(static_cast<char>(major));
  bytes.push_back(0);
  size_t length = header.size();
  size_t length_bytes = major == 1 ? 2 : 4;
  for (size_t i = 0; i < length_bytes; ++i) bytes.push_back(static_cast<char>((length >> (8 * i)) & 0xFF));
  bytes += header;
  bytes.append(data_size, '\0');
  return bytes;
}

struct MalformedCase {
  const char* name;
  std::string bytes;
  const char* expected_message;  // a fragment of the error
};

TEST_F(NpyTest, MalformedCorpusGivesClearErrors) {
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  const MalformedCase cases[] = {
      {"empty", "", "bad magic"},
      {"bad magic", "\x93NUMPX\x01\x00\x10\x00" + good, "bad magic"},
      {"text file", "hello world, this is not numpy", "bad magic"},
      {"version 4", npy_with_header(good, 24, 4), "version 4.0"},
      {"prefix only", std::string("\x93NUMPY\x01\x00\x50", 9), "truncated before the header length"},
      {"header longer than file", std::string("\x93NUMPY\x01\x00\xff\x00{'descr'", 17), "truncated header"},
      {"not a dict", npy_with_header("['descr', '<f4']", 24), "expected '{'"},
      {"missing shape", npy_with_header("{'descr': '<f4', 'fortran_order': False}", 24), "missing key 'shape'"},
      {"missing descr", npy_with_header("{'fortran_order': False, 'shape': (2, 3)}", 24), "missing key 'descr'"},
      {"unknown key", npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", 24),
       "unexpected key 'x'"},
      {"duplicate key", npy_with_header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", 4),
       "duplicate key 'descr'"},
      {"unterminated string", npy_with_header("{'descr: <f4}", 24), "unterminated string"},
      {"unclosed dict", npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", 24),
       "expected ',' or '}'"},
      {"trailing junk", npy_with_header(good + " junk", 24), "trailing characters"},
      {"bad bool", npy_with_header("{'descr': '<f4', 'fortran_order': 0, 'shape': (6,)}", 24), "True or False"},
      {"negative dim", npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3)}", 24),
       "non-negative integer"},
      {"float dim", npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}", 24),
       "expected ',' or ')'"},
      {"dim overflows int64", npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 24),
       "does not fit"},
      {"numel overflows", npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", 24),
       "too many elements"},
      {"bytes overflow", npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,)}", 24),
       "too large"},
      {"huge but fits", npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000)}", 24),
       "needs 4000000000000 data bytes, file has 24"},
      {"data too short", npy_with_header(good, 23), "needs 24 data bytes, file has 23"},
      {"data too long", npy_with_header(good, 25), "needs 24 data bytes, file has 25"},
      {"fortran order", npy_with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3)}", 24),
       "fortran_order=True"},
      {"big endian", npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3)}", 24), "big-endian"},
      {"complex", npy_with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (3,)}", 24), "not supported"},
      {"string dtype", npy_with_header("{'descr': '<U5', 'fortran_order': False, 'shape': (2,)}", 40), "not supported"},
      {"object dtype", npy_with_header("{'descr': '|O', 'fortran_order': False, 'shape': (2,)}", 16), "unsupported dtype"},
      {"structured", npy_with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", 8),
       "structured"},
      {"no byte order", npy_with_header("{'descr': '|f4', 'fortran_order': False, 'shape': (6,)}", 24), "byte order"},
  };
  for (const MalformedCase& test_case : cases) {
    SCOPED_TRACE(test_case.name);
    auto result = parse_npy(test_case.bytes.data(), test_case.bytes.size(), "case.npy");
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.status().message().find(test_case.expected_message), std::string::npos)
        << result.status().message();
    EXPECT_NE(result.status().message().find("case.npy"), std::string::npos) << result.status().message();
  }
}

TEST_F(NpyTest, AcceptsVariantsNumpyAndOthersWrite) {
  // Double quotes, no trailing comma, Python 2 long dims, '=' byte order, version 2.0 and 3.0.
  const std::pair<std::string, unsigned char> variants[] = {
      {"{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}\n", 1},
      {"{'descr':'<f4','fortran_order':False,'shape':(2L,3L)}", 1},
      {"{'descr': '=f4', 'fortran_order': False, 'shape': (2, 3), }", 2},
      {"{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}", 3},
  };
  for (const auto& [header, major] : variants) {
    SCOPED_TRACE(header);
    std::string bytes = npy_with_header(header, 24, major);
    auto result = parse_npy(bytes.data(), bytes.size());
    ASSERT_TRUE(result.ok()) << result.status().to_string();
    EXPECT_EQ(result->shape(), (Shape{2, 3}));
    EXPECT_EQ(result->dtype(), DataType::kFloat);
  }
}

// Every truncation and random byte corruption of a valid file must give an error or a tensor,
// never a crash (run under the sanitizer build to catch out-of-bounds reads).
TEST_F(NpyTest, TruncatedAndCorruptedFilesNeverCrash) {
  auto valid = serialize_npy(Tensor::from_vector<int16_t>({2, 2}, {1, -2, 3, -4}));
  ASSERT_TRUE(valid.ok());
  for (size_t length = 0; length < valid->size(); ++length) {
    EXPECT_FALSE(parse_npy(valid->data(), length).ok()) << "length " << length;
  }
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string corrupted = *valid;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) corrupted[rng() % corrupted.size()] = static_cast<char>(rng());
    auto result = parse_npy(corrupted.data(), corrupted.size());
    if (result.ok()) {
      EXPECT_EQ(static_cast<size_t>(result->numel()) * dtype_size(result->dtype()), result->nbytes());
    }
  }
}

bool python_numpy_available() {
  return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
}

// Values each dtype gets in the numpy interop tests: arange, shifted to cover negatives.
const char* kNumpyScript = R"PY(
import sys, numpy as np
out = sys.argv[1]
dtypes = ['f4', 'f8', 'i1', 'u1', 'i2', 'u2', 'i4', 'i8', 'u4', 'u8', 'b1', 'f2']
for dt in dtypes:
    values = (np.arange(24) - 5) * 0.5 if dt[0] == 'f' else np.arange(24) % 2 if dt == 'b1' else np.arange(24) + (0 if dt[0] == 'u' else -5)
    array = values.reshape(2, 3, 4).astype(dt)
    np.save(f'{out}/{dt}.npy', array)
np.save(f'{out}/scalar.npy', np.float32(2.5))
np.save(f'{out}/empty.npy', np.zeros((0, 3), np.int32))
with open(f'{out}/v2.npy', 'wb') as f:
    np.lib.format.write_array(f, np.arange(6, dtype='<i4').reshape(2, 3), version=(2, 0))
with open(f'{out}/v3.npy', 'wb') as f:
    np.lib.format.write_array(f, np.arange(6, dtype='<i4').reshape(2, 3), version=(3, 0))
np.save(f'{out}/fortran.npy', np.asfortranarray(np.arange(6, dtype='f4').reshape(2, 3)))
np.save(f'{out}/bigendian.npy', np.arange(6, dtype='>i4'))
np.save(f'{out}/complex.npy', np.arange(6, dtype='c8'))
np.save(f'{out}/transposed.npy', np.arange(6, dtype='f4').reshape(2, 3).T)
)PY";

TEST_F(NpyTest, ReadsFilesWrittenByNumpy) {
  if (!python_numpy_available()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  {
    std::ofstream script(path("make.py"));
    script << kNumpyScript;
  }
  ASSERT_EQ(std::system(fmt::format("/usr/bin/python3 {} {}", path("make.py"), dir_.string()).c_str()), 0);

  const std::pair<const char*, DataType> dtypes[] = {
      {"f4", DataType::kFloat},  {"f8", DataType::kDouble}, {"i1", DataType::kInt8},   {"u1", DataType::kUint8},
      {"i2", DataType::kInt16},  {"u2", DataType::kUint16}, {"i4", DataType::kInt32},  {"i8", DataType::kInt64},
      {"u4", DataType::kUint32}, {"u8", DataType::kUint64}, {"b1", DataType::kBool},   {"f2", DataType::kFloat16}};
  for (const auto& [code, dtype] : dtypes) {
    SCOPED_TRACE(code);
    auto tensor = read_npy(path(std::string(code) + ".npy"));
    ASSERT_TRUE(tensor.ok()) << tensor.status().to_string();
    EXPECT_EQ(tensor->dtype(), dtype);
    EXPECT_EQ(tensor->shape(), (Shape{2, 3, 4}));
    for (int64_t i = 0; i < 24; ++i) {
      if (dtype == DataType::kFloat16) {
        // (i - 5) * 0.5 in half precision: sign, exponent and mantissa are exact.
        uint16_t bits = tensor->data<uint16_t>()[i];
        float expected = (static_cast<float>(i) - 5) * 0.5f;
        int exponent = ((bits >> 10) & 0x1F);
        float magnitude = exponent == 0 ? 0.0f : std::ldexp(1.0f + (bits & 0x3FF) / 1024.0f, exponent - 15);
        EXPECT_EQ((bits & 0x8000) ? -magnitude : magnitude, expected) << i;
      } else if (dtype_is_float(dtype)) {
        EXPECT_EQ(tensor->value_as_double(i), (static_cast<double>(i) - 5) * 0.5) << i;
      } else if (dtype == DataType::kBool) {
        EXPECT_EQ(tensor->value_as_double(i), i % 2) << i;
      } else {
        bool is_unsigned = code[0] == 'u';
        EXPECT_EQ(tensor->value_as_int64(i), is_unsigned ? i : i - 5) << i;
      }
    }
  }
  auto scalar = read_npy(path("scalar.npy"));
  ASSERT_TRUE(scalar.ok()) << scalar.status().to_string();
  EXPECT_EQ(scalar->shape(), Shape{});
  EXPECT_EQ(scalar->data<float>()[0], 2.5f);
  auto empty = read_npy(path("empty.npy"));
  ASSERT_TRUE(empty.ok()) << empty.status().to_string();
  EXPECT_EQ(empty->shape(), (Shape{0, 3}));
  for (const char* versioned : {"v2.npy", "v3.npy"}) {
    auto tensor = read_npy(path(versioned));
    ASSERT_TRUE(tensor.ok()) << versioned << ": " << tensor.status().to_string();
    EXPECT_EQ(tensor->shape(), (Shape{2, 3}));
    EXPECT_EQ(tensor->data<int32_t>()[5], 5);
  }
  for (const char* rejected : {"fortran.npy", "bigendian.npy", "complex.npy", "transposed.npy"}) {
    auto tensor = read_npy(path(rejected));
    ASSERT_FALSE(tensor.ok()) << rejected;
    EXPECT_EQ(tensor.status().code(), StatusCode::kUnsupported) << tensor.status().to_string();
  }
}

TEST_F(NpyTest, NumpyReadsFilesWeWrite) {
  if (!python_numpy_available()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  ASSERT_TRUE(write_npy(path("f4.npy"), Tensor::from_vector<float>({2, 2}, {1.5f, -2.0f, 3.25f, 0.0f})).is_ok());
  ASSERT_TRUE(write_npy(path("i8.npy"), Tensor::from_vector<int64_t>({3}, {-1, 0, 1ll << 40})).is_ok());
  ASSERT_TRUE(write_npy(path("b1.npy"), Tensor::from_vector<bool>({2}, {true, false})).is_ok());
  ASSERT_TRUE(write_npy(path("scalar.npy"), Tensor::scalar<uint8_t>(200)).is_ok());
  Tensor half(DataType::kFloat16, {2});
  half.data<uint16_t>()[0] = 0x3C00;  // 1.0
  half.data<uint16_t>()[1] = 0xC000;  // -2.0
  ASSERT_TRUE(write_npy(path("f2.npy"), half).is_ok());
  std::string check = fmt::format(
      "import numpy as np, sys; d='{}'\n"
      "a=np.load(d+'/f4.npy'); assert a.dtype==np.float32 and a.shape==(2,2) and a.tolist()==[[1.5,-2.0],[3.25,0.0]], a\n"
      "a=np.load(d+'/i8.npy'); assert a.dtype==np.int64 and a.tolist()==[-1,0,1<<40], a\n"
      "a=np.load(d+'/b1.npy'); assert a.dtype==np.bool_ and a.tolist()==[True,False], a\n"
      "a=np.load(d+'/scalar.npy'); assert a.dtype==np.uint8 and a.shape==() and a==200, a\n"
      "a=np.load(d+'/f2.npy'); assert a.dtype==np.float16 and a.tolist()==[1.0,-2.0], a\n",
      dir_.string());
  {
    std::ofstream script(path("check.py"));
    script << check;
  }
  EXPECT_EQ(std::system(fmt::format("/usr/bin/python3 {}", path("check.py")).c_str()), 0);
}

}  // namespace
}  // namespace qdqrt
