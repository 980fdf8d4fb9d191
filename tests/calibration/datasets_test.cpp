// Data SPEC readers: Fashion-MNIST IDX (gzip), .npy directories with labels, TensorProto files,
// normalization and the errors for bad SPECs and mismatched shapes.
#include <gtest/gtest.h>

#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "tools/npy.h"
#include "parser/onnx_writer.h"
#include "tools/datasets.h"

#include <onnx/onnx_pb.h>

namespace qdqrt::tools {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("qdqrt_datasets_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(Datasets, FashionMnistTestSplit) {
  DatasetOptions options;
  options.max_images = 10;
  auto data = load_dataset("fashion-mnist:/usr/share/datasets/fashion-mnist:test", options);
  ASSERT_TRUE(data.ok()) << data.status().to_string();
  EXPECT_EQ(data->images.shape(), (Shape{10, 1, 28, 28}));
  ASSERT_TRUE(data->labels);
  EXPECT_EQ(data->labels->to_int64_vector(), (std::vector<int64_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}));
  // Image 0: pixel (14, 14) is 110; pixels scaled to [0, 1].
  EXPECT_FLOAT_EQ(data->images.data<float>()[14 * 28 + 14], 110.0f / 255.0f);
  double sum = 0;
  for (int i = 0; i < 784; ++i) sum += data->images.data<float>()[i];
  EXPECT_NEAR(sum, 33456.0 / 255.0, 1e-3);

  options.mean = {0.2860f};
  options.std = {0.3530f};
  auto normalized = load_dataset("fashion-mnist:test", options);  // default directory
  ASSERT_TRUE(normalized.ok()) << normalized.status().to_string();
  EXPECT_FLOAT_EQ(normalized->images.data<float>()[14 * 28 + 14], (110.0f / 255.0f - 0.2860f) / 0.3530f);
}

TEST(Datasets, IdxReaderReadsPlainAndGzipFilesAndRejectsGarbage) {
  fs::path dir = fresh_dir("idx");
  std::vector<uint8_t> bytes = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  {
    std::ofstream plain(dir / "x-images-idx3-ubyte", std::ios::binary);
    plain.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  gzFile gz = gzopen((dir / "y.gz").string().c_str(), "wb");
  gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(gz);
  for (const char* name : {"x-images-idx3-ubyte", "y.gz"}) {
    auto tensor = read_idx_file((dir / name).string());
    ASSERT_TRUE(tensor.ok()) << tensor.status().to_string();
    EXPECT_EQ(tensor->shape(), (Shape{2, 2, 3}));
    EXPECT_EQ(tensor->data<uint8_t>()[11], 12);
  }
  auto first = read_idx_file((dir / "y.gz").string(), 1);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->shape(), (Shape{1, 2, 3}));
  {
    std::ofstream truncated(dir / "t", std::ios::binary);
    truncated.write(reinterpret_cast<const char*>(bytes.data()), 20);
  }
  auto short_file = read_idx_file((dir / "t").string());
  ASSERT_FALSE(short_file.ok());
  EXPECT_NE(short_file.status().message().find("truncated"), std::string::npos);
  {
    std::ofstream text(dir / "text");
    text << "hello world, not idx";
  }
  EXPECT_FALSE(read_idx_file((dir / "text").string()).ok());
  fs::remove_all(dir);
}

TEST(Datasets, NpyDirectoryWithLabels) {
  fs::path dir = fresh_dir("npy");
  // A batch of 2 RGB float images, then one single [3, 2, 2] image; labels for all 3.
  std::vector<float> batch(2 * 3 * 2 * 2);
  for (size_t i = 0; i < batch.size(); ++i) batch[i] = static_cast<float>(i);
  ASSERT_TRUE(write_npy((dir / "a.npy").string(), Tensor::from_vector<float>({2, 3, 2, 2}, batch)).is_ok());
  ASSERT_TRUE(write_npy((dir / "b.npy").string(), Tensor::from_vector<float>({3, 2, 2}, std::vector<float>(12, 1.0f))).is_ok());
  ASSERT_TRUE(write_npy((dir / "labels.npy").string(), Tensor::from_vector<int64_t>({3}, {4, 5, 6})).is_ok());
  DatasetOptions options;
  options.mean = {1.0f, 2.0f, 3.0f};
  options.std = {2.0f};
  auto data = load_dataset("npy:" + dir.string(), options);
  ASSERT_TRUE(data.ok()) << data.status().to_string();
  EXPECT_EQ(data->images.shape(), (Shape{3, 3, 2, 2}));
  EXPECT_EQ(data->labels->to_int64_vector(), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_FLOAT_EQ(data->images.data<float>()[0], (0.0f - 1.0f) / 2.0f);
  EXPECT_FLOAT_EQ(data->images.data<float>()[4], (4.0f - 2.0f) / 2.0f);   // channel 1
  EXPECT_FLOAT_EQ(data->images.data<float>()[24 + 8], (1.0f - 3.0f) / 2.0f);  // image 2, channel 2
  // A plain directory path works too, and max_images keeps the first ones.
  options.max_images = 1;
  auto one = load_dataset(dir.string(), options);
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_EQ(one->size(), 1);
  EXPECT_EQ(one->labels->to_int64_vector(), std::vector<int64_t>{4});

  // Wrong channel count for --mean.
  DatasetOptions two_means;
  two_means.mean = {0.5f, 0.5f};
  auto bad_mean = load_dataset("npy:" + dir.string(), two_means);
  ASSERT_FALSE(bad_mean.ok());
  EXPECT_NE(bad_mean.status().message().find("3 channels"), std::string::npos) << bad_mean.status().message();
  // Mismatched image shapes across files.
  ASSERT_TRUE(write_npy((dir / "c.npy").string(), Tensor::from_vector<float>({1, 4, 4}, std::vector<float>(16))).is_ok());
  auto mismatch = load_dataset("npy:" + dir.string());
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("all images must match"), std::string::npos) << mismatch.status().message();
  fs::remove(dir / "c.npy");
  // Label count mismatch.
  ASSERT_TRUE(write_npy((dir / "labels.npy").string(), Tensor::from_vector<int64_t>({2}, {1, 2})).is_ok());
  auto labels = load_dataset("npy:" + dir.string());
  ASSERT_FALSE(labels.ok());
  EXPECT_NE(labels.status().message().find("3 images but 2 labels"), std::string::npos) << labels.status().message();
  fs::remove_all(dir);
}

TEST(Datasets, TensorProtoFiles) {
  fs::path dir = fresh_dir("pb");
  fs::create_directories(dir / "test_data_set_0");
  fs::create_directories(dir / "test_data_set_1");
  for (int set = 0; set < 2; ++set) {
    Tensor image(DataType::kUint8, {1, 1, 2, 2});
    for (int i = 0; i < 4; ++i) image.data<uint8_t>()[i] = static_cast<uint8_t>(set * 100 + i);
    auto proto = tensor_to_proto(image, "input");
    ASSERT_TRUE(proto.ok());
    std::ofstream file(dir / fmt::format("test_data_set_{}", set) / "input_0.pb", std::ios::binary);
    ASSERT_TRUE(proto->SerializeToOstream(&file));
  }
  auto data = load_dataset("pb:" + dir.string());
  ASSERT_TRUE(data.ok()) << data.status().to_string();
  EXPECT_EQ(data->images.shape(), (Shape{2, 1, 2, 2}));
  EXPECT_FALSE(data->labels);
  EXPECT_FLOAT_EQ(data->images.data<float>()[5], 101.0f / 255.0f);
  auto single = load_dataset((dir / "test_data_set_1" / "input_0.pb").string());
  ASSERT_TRUE(single.ok()) << single.status().to_string();
  EXPECT_EQ(single->size(), 1);
  fs::remove_all(dir);
}

TEST(Datasets, BadSpecsAndShapeChecks) {
  for (const char* spec : {"", "fashion-mnist", "fashion-mnist:validation", "fashion-mnist:/nonexistent:test",
                           "npy:", "pb:/nonexistent", "/nonexistent/dir", "imagenet:val"}) {
    auto data = load_dataset(spec);
    EXPECT_FALSE(data.ok()) << spec;
    if (!data.ok()) {
      EXPECT_FALSE(data.status().message().empty());
    }
  }
  EXPECT_NE(load_dataset("fashion-mnist:validation").status().message().find("'train' or 'test'"), std::string::npos);
  EXPECT_NE(load_dataset("fashion-mnist:/nonexistent:test").status().message().find("/nonexistent"), std::string::npos);

  Tensor images(DataType::kFloat, {2, 1, 28, 28});
  EXPECT_TRUE(check_images_fit_input(images, {-1, 1, 28, 28}, "input").is_ok());
  Status wrong = check_images_fit_input(images, {-1, 3, 224, 224}, "input");
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.message().find("[1, 28, 28]"), std::string::npos) << wrong.message();
  EXPECT_NE(wrong.message().find("[3, 224, 224]"), std::string::npos) << wrong.message();
  EXPECT_FALSE(check_images_fit_input(images, {-1, 784}, "input").is_ok());

  EXPECT_EQ(*parse_float_list("0.485,0.456,0.406", "mean"), (std::vector<float>{0.485f, 0.456f, 0.406f}));
  EXPECT_FALSE(parse_float_list("0.5,", "mean").ok());
  EXPECT_FALSE(parse_float_list("abc", "std").ok());
}

}  // namespace
}  // namespace qdqrt::tools
