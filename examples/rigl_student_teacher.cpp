// RigL finding a sparse teacher: a student linear layer at 90% sparsity, stored compressed and
// trained with the sparse kernels, learns Y = X T^T for a teacher T that is itself 90% sparse.
// RigL grows connections where the dense gradient is largest, so the student's mask should
// converge onto the teacher's support, which a static random mask cannot do.
//
//   build/examples/example_rigl_student_teacher     (exit 1 if RigL did not beat a static mask)
#include <cmath>
#include <cstdio>

#include <sparsetrain/core/philox.h>
#include <sparsetrain/formats/random_mask.h>
#include <sparsetrain/ops/linear.h>
#include <sparsetrain/optim/sgd.h>
#include <sparsetrain/sparsity/algorithms.h>

using namespace sparsetrain;

constexpr int64_t kIn = 128, kOut = 64, kTokens = 256, kSteps = 600;

struct Student : Module {
  Student() : Module("Linear") {
    weight = &register_parameter("weight", {kOut, kIn});
    const Philox rng(7, "student");
    auto v = weight->values();
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = (rng.uniform(i) - 0.5f) * 0.2f;
  }
  Parameter* weight;
};

// The fraction of the teacher's nonzeros that the student's mask keeps.
double recall(const Mask& student, const Mask& teacher) {
  int64_t hit = 0;
  for (int64_t i = 0; i < kOut * kIn; ++i) hit += student.data()[i] && teacher.data()[i];
  return static_cast<double>(hit) / static_cast<double>(teacher.nnz());
}

// Trains a fresh student under `algorithm` and returns the final loss.
double train(SparsityAlgorithm& algorithm, bool verbose) {
  // The teacher: 90% sparse, weights of either sign away from zero.
  const Mask teacher_mask = random_mask(FormatSpec::csr(), kOut, kIn, 0.9, Philox(1, "teacher"));
  Matrix teacher(kOut, kIn, 0.0f);
  const Philox trng(2, "teacher values");
  for (int64_t i = 0; i < teacher.size(); ++i)
    if (teacher_mask.data()[i]) teacher.data()[i] = trng.uniform(i) < 0.5f ? -1.0f : 1.0f;

  Student student;
  algorithm.apply(student);
  Parameter& w = *student.weight;
  Sgd sgd(student.parameters(), 0.5, {.momentum = 0.9});
  algorithm.apply(sgd);

  Matrix x(kTokens, kIn), target(kTokens, kOut), y(kTokens, kOut), dy(kTokens, kOut);
  LinearWorkspace ws;
  double loss = 0.0;
  for (int64_t step = 1; step <= kSteps; ++step) {
    const Philox data(3, "inputs", static_cast<uint64_t>(step));
    for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = data.uniform(i) * 2.0f - 1.0f;
    for (int64_t t = 0; t < kTokens; ++t)  // target = X teacher^T, a plain dense product
      for (int64_t o = 0; o < kOut; ++o) {
        float sum = 0.0f;
        for (int64_t k = 0; k < kIn; ++k) sum += x.at(t, k) * teacher.at(o, k);
        target.at(t, o) = sum;
      }

    algorithm.prepare_step(step);
    linear_forward(w.compressed(), nullptr, x, y, ws);
    loss = 0.0;
    for (int64_t i = 0; i < y.size(); ++i) {
      const float err = y.data()[i] - target.data()[i];
      loss += 0.5 * err * err / kTokens;
      dy.data()[i] = err / kTokens;
    }
    linear_backward(w.compressed(), dy, ws, MatrixView{}, w.grad().data(), nullptr);
    if (w.wants_dense_grad) {  // RigL's update steps only
      w.dense_grad = Matrix(kOut, kIn);
      linear_dense_weight_grad(dy, x, w.dense_grad);
    }
    sgd.step();  // runs algorithm.update(step) afterwards
    if (verbose && step % 100 == 0)
      std::printf("  step %4lld  loss %9.5f  mask recall of the teacher %.2f\n", static_cast<long long>(step), loss,
                  recall(w.mask(), teacher_mask));
  }
  return loss;
}

int main() {
  SparsityOptions options;
  options.format = FormatSpec::csr();
  options.seed = 11;

  std::printf("RigL 90%%, update every 25 steps until 500, cosine drop fraction from 0.3:\n");
  RigL rigl(LevelSchedule::constant(0.9), UpdateSchedule::every(25, 0, 500), LevelSchedule::cosine(0.3, 500), options);
  const double rigl_loss = train(rigl, true);

  std::printf("Static 90%% (same initial mask):\n");
  Static fixed(0.9, options);
  const double static_loss = train(fixed, true);

  std::printf("final loss: RigL %.5f, static %.5f\n", rigl_loss, static_loss);
  return rigl_loss < 0.5 * static_loss ? 0 : 1;
}
