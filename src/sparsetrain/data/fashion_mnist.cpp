#include "sparsetrain/data/fashion_mnist.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/data/idx.h"

namespace sparsetrain {

ImageSet ImageSet::subset(std::span<const int64_t> indices) const {
  ImageSet out;
  out.rows = rows;
  out.cols = cols;
  const int64_t pixels = images.cols();
  out.images = Matrix(static_cast<int64_t>(indices.size()), pixels);
  out.labels.reserve(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    const int64_t i = indices[k];
    if (i < 0 || i >= count()) fail("ImageSet::subset: index {} at position {} is outside [0, {})", i, k, count());
    std::copy(image(i), image(i) + pixels, out.images.data() + static_cast<int64_t>(k) * pixels);
    out.labels.push_back(labels[i]);
  }
  return out;
}

ImageSet load_idx_image_set(const std::string& images_path, const std::string& labels_path, int64_t rows, int64_t cols,
                            int classes) {
  IdxArray images = read_idx_images(images_path);
  if (images.dims[1] != rows || images.dims[2] != cols) {
    fail("{}: images are {}x{} (sizes at byte offsets 8 and 12): expected {}x{}", images_path, images.dims[1],
         images.dims[2], rows, cols);
  }
  IdxArray labels = read_idx_labels(labels_path);
  if (labels.dims[0] != images.dims[0]) {
    fail("{}: {} labels (byte offset 4) but {} has {} images: expected one label per image", labels_path,
         labels.dims[0], images_path, images.dims[0]);
  }
  ImageSet set;
  set.rows = rows;
  set.cols = cols;
  const int64_t n = images.dims[0];
  set.labels.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t label = labels.data[i];
    if (label >= classes) {
      fail("{}: label {} of image {} at byte offset {}: expected 0 to {}", labels_path, label, i,
           labels.header_bytes() + i, classes - 1);
    }
    set.labels[i] = label;
  }
  set.images = Matrix(n, rows * cols);
  float* out = set.images.data();
  for (size_t i = 0; i < images.data.size(); ++i) out[i] = static_cast<float>(images.data[i]) / 255.0f;
  return set;
}

namespace {

std::string find_file(const std::string& dir, const std::string& name) {
  const std::filesystem::path base(dir);
  for (const std::string& candidate : {name + ".gz", name}) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(base / candidate, ec)) return (base / candidate).string();
  }
  fail("Fashion-MNIST: neither {} nor {} exists (install Debian's dataset-fashion-mnist: run scripts/setup.sh)",
       (base / (name + ".gz")).string(), (base / name).string());
}

}  // namespace

FashionMnist load_fashion_mnist(const std::string& dir) {
  // Files are looked up in this order, so a missing folder is reported by its first file.
  const std::string train_images = find_file(dir, "train-images-idx3-ubyte");
  const std::string train_labels = find_file(dir, "train-labels-idx1-ubyte");
  const std::string test_images = find_file(dir, "t10k-images-idx3-ubyte");
  const std::string test_labels = find_file(dir, "t10k-labels-idx1-ubyte");
  FashionMnist data;
  data.train = load_idx_image_set(train_images, train_labels, 28, 28, kFashionMnistClasses);
  data.test = load_idx_image_set(test_images, test_labels, 28, 28, kFashionMnistClasses);
  return data;
}

std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, std::string_view name) {
  if (n < 0) fail("shuffled_indices: n = {}: expected n >= 0", n);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  const Philox rng(seed, name);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(n - 1 - i), static_cast<uint64_t>(i + 1)));
    std::swap(order[i], order[j]);
  }
  return order;
}

}  // namespace sparsetrain
