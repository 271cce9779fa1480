#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "error_of.h"
#include "sparsetrain/data/fashion_mnist.h"

namespace sparsetrain {
namespace {

// The real files from Debian's dataset-fashion-mnist, installed by scripts/setup.sh; loaded once.
const FashionMnist& real_data() {
  static const FashionMnist data = load_fashion_mnist();
  return data;
}

TEST(FashionMnist, LoadsTheDebianFiles) {
  const FashionMnist& data = real_data();
  ASSERT_EQ(data.train.count(), 60000);
  ASSERT_EQ(data.test.count(), 10000);
  EXPECT_EQ(data.train.images.cols(), 784);
  EXPECT_EQ(data.train.rows, 28);
  EXPECT_EQ(data.train.cols, 28);
  EXPECT_EQ(data.train.labels.size(), 60000u);
  EXPECT_EQ(data.test.labels.size(), 10000u);
  // The first training image is an ankle boot, the first test image too (standard files).
  EXPECT_EQ(data.train.labels[0], 9);
  EXPECT_EQ(FashionMnist::class_names[data.train.labels[0]], "Ankle boot");
  EXPECT_EQ(data.test.labels[0], 9);
  for (const ImageSet* set : {&data.train, &data.test}) {
    const float* p = set->images.data();
    const auto [lo, hi] = std::minmax_element(p, p + set->images.size());
    EXPECT_EQ(*lo, 0.0f);
    EXPECT_EQ(*hi, 1.0f);
    std::vector<int64_t> per_class(10, 0);
    for (int32_t label : set->labels) ++per_class[label];
    for (int64_t c : per_class) EXPECT_EQ(c, set->count() / 10);  // balanced classes
  }
}

TEST(FashionMnist, SubsetAndShuffle) {
  const std::vector<int64_t> a = shuffled_indices(1000, 0);
  EXPECT_EQ(a, shuffled_indices(1000, 0));
  EXPECT_NE(a, shuffled_indices(1000, 1));
  EXPECT_NE(a, shuffled_indices(1000, 0, "other"));
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_NE(a, sorted);
  EXPECT_TRUE(shuffled_indices(0, 0).empty());
  EXPECT_EQ(shuffled_indices(1, 0), (std::vector<int64_t>{0}));

  ImageSet set;
  set.rows = 1;
  set.cols = 2;
  set.images = Matrix(3, 2);
  for (int64_t i = 0; i < 6; ++i) set.images.data()[i] = static_cast<float>(i);
  set.labels = {4, 5, 6};
  const std::vector<int64_t> pick{2, 0, 2};
  const ImageSet sub = set.subset(pick);
  EXPECT_EQ(sub.count(), 3);
  EXPECT_EQ(sub.labels, (std::vector<int32_t>{6, 4, 6}));
  EXPECT_EQ(sub.image(0)[0], 4.0f);
  EXPECT_EQ(sub.image(0)[1], 5.0f);
  EXPECT_EQ(sub.image(1)[1], 1.0f);
  const std::vector<int64_t> bad{0, 3};
  EXPECT_EQ(testing::error_of([&] { set.subset(bad); }), "ImageSet::subset: index 3 at position 1 is outside [0, 3)");
}

// 2,000 training and 1,000 test images: shuffle with seed 0 and take the first ones.
TEST(FashionMnist, SmallSubsetFromTheRealData) {
  const FashionMnist& data = real_data();
  std::vector<int64_t> order = shuffled_indices(data.train.count(), 0);
  order.resize(2000);
  const ImageSet train = data.train.subset(order);
  EXPECT_EQ(train.count(), 2000);
  EXPECT_EQ(std::set<int64_t>(order.begin(), order.end()).size(), 2000u);
  EXPECT_EQ(train.labels[5], data.train.labels[order[5]]);
  EXPECT_TRUE(std::equal(train.image(7), train.image(7) + 784, data.train.image(order[7])));
}

class ImageSetFiles : public ::testing::Test {
 protected:
  std::string write(const std::string& name, std::vector<uint8_t> bytes) {
    const auto dir = std::filesystem::temp_directory_path() / ("sparsetrain_test_fm_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return path;
  }
  // n images of 2x2 (pixel values 0 and 255) and the given labels.
  std::string images(uint8_t n, uint8_t rows = 2) {
    std::vector<uint8_t> b{0, 0, 8, 3, 0, 0, 0, n, 0, 0, 0, rows, 0, 0, 0, 2};
    for (int i = 0; i < n * rows * 2; ++i) b.push_back(i % 2 ? 255 : 0);
    return write("images", b);
  }
  std::string labels(std::vector<uint8_t> values) {
    std::vector<uint8_t> b{0, 0, 8, 1, 0, 0, 0, static_cast<uint8_t>(values.size())};
    b.insert(b.end(), values.begin(), values.end());
    return write("labels", b);
  }
};

TEST_F(ImageSetFiles, Validates) {
  const ImageSet ok = load_idx_image_set(images(2), labels({1, 9}), 2, 2, 10);
  EXPECT_EQ(ok.count(), 2);
  EXPECT_EQ(ok.labels, (std::vector<int32_t>{1, 9}));
  EXPECT_EQ(ok.image(1)[0], 0.0f);
  EXPECT_EQ(ok.image(1)[1], 1.0f);

  std::string im = images(2, 3);
  std::string lb = labels({1, 9});
  EXPECT_EQ(testing::error_of([&] { load_idx_image_set(im, lb, 2, 2, 10); }),
            im + ": images are 3x2 (sizes at byte offsets 8 and 12): expected 2x2");
  im = images(2);
  lb = labels({1, 2, 3});
  EXPECT_EQ(testing::error_of([&] { load_idx_image_set(im, lb, 2, 2, 10); }),
            lb + ": 3 labels (byte offset 4) but " + im + " has 2 images: expected one label per image");
  lb = labels({1, 10});
  EXPECT_EQ(testing::error_of([&] { load_idx_image_set(im, lb, 2, 2, 10); }),
            lb + ": label 10 of image 1 at byte offset 9: expected 0 to 9");
  EXPECT_EQ(testing::error_of([&] { load_idx_image_set(lb, im, 2, 2, 10); }),
            lb + ": magic 0x00000801 at byte offset 0 (1 dimension): expected 0x00000803, images (3 dimensions)");
}

TEST(FashionMnist, MissingDirectory) {
  EXPECT_EQ(testing::error_of([] { load_fashion_mnist("/nonexistent/fm"); }),
            "Fashion-MNIST: neither /nonexistent/fm/train-images-idx3-ubyte.gz nor "
            "/nonexistent/fm/train-images-idx3-ubyte exists (install Debian's dataset-fashion-mnist: run "
            "scripts/setup.sh)");
}

}  // namespace
}  // namespace sparsetrain
