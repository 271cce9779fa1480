#pragma once
// Data-parallel gradient averaging: after each rank's backward pass over its share of the global
// batch, every parameter's gradient becomes the gradient of the global batch's mean loss,
//
//   g = sum over ranks r of (n_r / N) g_r        n_r: rank r's predictions, N: the batch's
//
// with the same bits on every rank. Parameters go into buckets of about `bucket_bytes` of payload,
// in the reverse of the model's parameter order (the order backward finishes them, as PyTorch's
// DDP does). A bucket is reduced as soon as its parameters' gradients are final (Model::
// on_grads_ready), on a thread of its own with a communicator of its own, while the backward pass
// goes on; finish() waits for the rest. Buckets go out in bucket order on every rank and their
// contents depend only on the masks, so the result does not depend on timing.
//
// The payload of a compressed sparse parameter is its kept values only (its grad() holds nothing
// else): at 90% sparsity a tenth of the dense bytes, with no indices, because the masks are the
// same on every rank. Dense and masked-dense parameters send every element. In a bf16 run the
// payload is bf16 (summed in float32 at each hop); in float32 runs it is float32.
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "sparsetrain/core/precision.h"
#include "sparsetrain/dist/communicator.h"
#include "sparsetrain/nn/parameter.h"

namespace sparsetrain {

// What one step's reduction moved and cost on this rank.
struct ReduceStats {
  int64_t buckets = 0;
  double payload_bytes = 0.0;         // gradients all-reduced, as sent
  double dense_bytes = 0.0;           // the same parameters as dense float32 gradients
  double sparse_payload_bytes = 0.0;  // of these, the compressed parameters'
  double sparse_dense_bytes = 0.0;
  double dense_grad_bytes = 0.0;  // RigL's dense gradients on its update steps
  double wait_seconds = 0.0;      // finish(): waiting for reductions the backward pass did not hide
};

class GradientReducer {
 public:
  // `comm` is duplicated for the reducer's thread; without MPI_THREAD_MULTIPLE buckets are reduced
  // in finish(), one after another, with no overlap.
  GradientReducer(Communicator& comm, std::vector<Parameter*> params, int64_t bucket_bytes, Precision payload);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Before the backward pass of a step: this rank's weight n_r / N. Lays the buckets out again when
  // a mask change resized a compressed parameter.
  void begin(double weight);
  // The gradients of these parameters are final for this step (called by the model's backward).
  void ready(std::span<Parameter* const> params);
  // After the backward pass: every gradient, and the dense gradient of every parameter that
  // wants_dense_grad, is averaged when it returns.
  void finish();

  const ReduceStats& stats() const { return stats_; }
  bool overlaps() const { return worker_comm_ != nullptr; }
  int64_t bucket_bytes() const { return bucket_bytes_; }

 private:
  struct Bucket {
    std::vector<Parameter*> params;
    std::vector<int64_t> sizes;  // each parameter's grad() length when laid out
    int64_t elements = 0;
    int pending = 0;  // parameters not yet ready this step
    std::vector<float> f32;
    std::vector<Bf16> b16;
  };
  struct Slot {
    std::size_t bucket;
    bool ready;
  };

  bool layout_current() const;
  void lay_out();
  void launch_ready_buckets();
  void reduce(Bucket& bucket, Communicator& comm);
  void work();

  Communicator& comm_;
  std::unique_ptr<Communicator> worker_comm_;  // null: reduce in finish()
  std::vector<Parameter*> params_;
  int64_t bucket_bytes_;
  Precision payload_;
  double weight_ = 1.0;

  std::vector<Bucket> buckets_;
  std::unordered_map<const Parameter*, Slot> slots_;
  std::size_t next_launch_ = 0;  // buckets before it are launched this step
  ReduceStats stats_;

  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::size_t queued_ = 0;   // buckets handed to the worker this step
  std::size_t reduced_ = 0;  // of them, done
  bool stopping_ = false;
  std::exception_ptr worker_error_;
};

}  // namespace sparsetrain
