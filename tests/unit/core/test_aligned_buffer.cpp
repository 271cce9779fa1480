// AlignedBuffer: 64-byte alignment (2 MB for huge-page candidates), growth that keeps the elements, and no reallocation
// while the size stays within capacity (what lets sparse weights rebuild after a mask update); Matrix::reshape on top
// of it.
#include <gtest/gtest.h>

#include <cstdint>

#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/core/tensor.h"

namespace sparsetrain {
namespace {

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kAlignment == 0; }

void fill_iota(AlignedBuffer<float>& b) {
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i) + 0.5f;
}

void expect_iota(const AlignedBuffer<float>& b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(b[i], static_cast<float>(i) + 0.5f) << "element " << i;
}

TEST(AlignedBuffer, EveryAllocationIsAligned) {
  for (std::size_t n : {1u, 3u, 17u, 1000u}) {
    AlignedBuffer<uint8_t> bytes(n);
    AlignedBuffer<double> doubles(n);
    EXPECT_TRUE(aligned(bytes.data())) << n;
    EXPECT_TRUE(aligned(doubles.data())) << n;
  }
}

// Huge-page candidates start on a 2 MB boundary (a 4 KB-aligned block could not be backed by one)
// and keep their elements when they grow into that size.
TEST(AlignedBuffer, BuffersOfTwoMegabytesStartOnAHugePage) {
  const std::size_t floats = kHugePage / sizeof(float);
  for (std::size_t n : {floats, floats + 3, 3 * floats + 17}) {
    AlignedBuffer<float> b(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kHugePage, 0u) << n;
  }
  AlignedBuffer<float> small(floats - 16);
  fill_iota(small);
  small.resize(floats + 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % kHugePage, 0u);
  expect_iota(small, floats - 16);
}

TEST(AlignedBuffer, ReserveKeepsElementsAndSize) {
  AlignedBuffer<float> b(37);
  fill_iota(b);
  b.reserve(1000);
  EXPECT_TRUE(aligned(b.data()));
  EXPECT_EQ(b.size(), 37u);
  EXPECT_GE(b.capacity(), 1000u);
  expect_iota(b, 37);
}

TEST(AlignedBuffer, GrowingResizeKeepsElements) {
  AlignedBuffer<float> b(5);
  fill_iota(b);
  b.resize(5000);
  EXPECT_TRUE(aligned(b.data()));
  EXPECT_EQ(b.size(), 5000u);
  expect_iota(b, 5);
}

TEST(AlignedBuffer, ResizeWithinCapacityDoesNotMoveData) {
  AlignedBuffer<float> b;
  b.reserve(1000);
  const float* stable = b.data();
  b.resize(900);
  fill_iota(b);
  b.resize(10);
  b.resize(1000);
  b.assign(1000, 2.0f);
  EXPECT_EQ(b.data(), stable);
  EXPECT_EQ(b.capacity(), 1000u);
}

TEST(AlignedBuffer, ShrinkThenRegrowKeepsTheSurvivingPrefix) {
  AlignedBuffer<float> b(64);
  fill_iota(b);
  b.resize(8);
  b.resize(64);
  expect_iota(b, 8);
}

TEST(AlignedBuffer, CloneCopiesAndMoveTransfers) {
  AlignedBuffer<float> a(20);
  fill_iota(a);
  AlignedBuffer<float> copy = a.clone();
  EXPECT_NE(copy.data(), a.data());
  expect_iota(copy, 20);
  const float* storage = a.data();
  AlignedBuffer<float> moved(std::move(a));
  EXPECT_EQ(moved.data(), storage);
  EXPECT_EQ(moved.size(), 20u);
  EXPECT_TRUE(a.empty());
}

// BERT's masked-token count changes every step; its head buffers must keep their storage. 8 MB,
// so a freed buffer would go back to the kernel and come back without these values.
TEST(Matrix, ReshapeWithinCapacityKeepsTheStorage) {
  Matrix m(300, 7000);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>(i % 4099) + 0.5f;
  const float* stable = m.data();
  m.reshape(280, 7000);
  EXPECT_EQ(m.rows(), 280);
  EXPECT_EQ(m.cols(), 7000);
  EXPECT_EQ(m.view().ld, 7000);
  m.reshape(300, 7000);
  m.reshape(7000, 300);
  EXPECT_EQ(m.data(), stable);
  EXPECT_EQ(m.size(), 7000 * 300);
  for (int64_t i = 0; i < m.size(); ++i) ASSERT_EQ(m.data()[i], static_cast<float>(i % 4099) + 0.5f) << "element " << i;
}

TEST(Matrix, ReshapePastCapacityGrowsAndThenKeepsTheStorage) {
  Matrix m(300, 70);
  m.reshape(301, 70);
  EXPECT_EQ(m.rows(), 301);
  EXPECT_TRUE(aligned(m.data()));
  m.data()[301 * 70 - 1] = 1.0f;  // the last element is ours (ASan checks)
  const float* grown = m.data();
  m.reshape(10, 7);
  m.reshape(301, 70);
  EXPECT_EQ(m.data(), grown);
}

}  // namespace
}  // namespace sparsetrain
