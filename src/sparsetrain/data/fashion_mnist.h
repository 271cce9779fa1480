#pragma once
// Fashion-MNIST (Xiao, Rasul and Vollgraf, 2017): 28x28 grey-scale images of clothing in ten
// classes, 60,000 for training and 10,000 for testing, as four IDX files. Debian's
// dataset-fashion-mnist package (installed by scripts/setup.sh) puts the gzipped files in
// /usr/share/datasets/fashion-mnist. See docs/data.md.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sparsetrain/core/tensor.h"

namespace sparsetrain {

inline constexpr std::string_view kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";
inline constexpr int kFashionMnistClasses = 10;
inline constexpr std::array<std::string_view, kFashionMnistClasses> kFashionMnistClassNames = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

// Labelled images: one row of rows*cols pixels per image (row-major, scaled from 0..255 to
// [0, 1] by /255), and one label per image.
struct ImageSet {
  Matrix images;                // [count, rows * cols]
  std::vector<int32_t> labels;  // [count], each in [0, classes)
  int64_t rows = 0;
  int64_t cols = 0;

  int64_t count() const { return images.rows(); }
  const float* image(int64_t i) const { return images.data() + i * images.cols(); }
  // The images and labels at `indices`, in that order (repeats allowed); an index out of
  // [0, count) is an Error.
  ImageSet subset(std::span<const int64_t> indices) const;
};

struct FashionMnist {
  ImageSet train;  // 60,000 images
  ImageSet test;   // 10,000 images
  static constexpr const std::array<std::string_view, kFashionMnistClasses>& class_names = kFashionMnistClassNames;
};

// Reads an images file (magic 0x00000803) and a labels file (0x00000801) and checks them against
// each other: equal counts, rows x cols as given, every label below `classes`. Errors name the file.
ImageSet load_idx_image_set(const std::string& images_path, const std::string& labels_path, int64_t rows, int64_t cols,
                            int classes);

// Loads {train,t10k}-{images-idx3,labels-idx1}-ubyte from `dir`, each as NAME.gz or, where that
// does not exist, NAME uncompressed; 28x28 images, labels 0..9.
FashionMnist load_fashion_mnist(const std::string& dir = std::string(kFashionMnistDefaultDir));

// 0..n-1 shuffled by Fisher-Yates with Philox(seed, name) draws: the same (n, seed, name) always
// gives the same order, on every platform. Take the first k for a random subset of size k.
std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, std::string_view name = "data.shuffle");

}  // namespace sparsetrain
