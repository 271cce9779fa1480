#include "sparsetrain/dist/gradient_reducer.h"

#include <chrono>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/profile.h"

namespace sparsetrain {

GradientReducer::GradientReducer(Communicator& comm, std::vector<Parameter*> params, int64_t bucket_bytes,
                                 Precision payload)
    : comm_(comm),
      worker_comm_(comm.duplicate()),
      params_(std::move(params)),
      bucket_bytes_(std::max<int64_t>(bucket_bytes, 1)),
      payload_(payload) {
  if (worker_comm_) worker_ = std::thread([this] { work(); });
}

GradientReducer::~GradientReducer() {
  if (!worker_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

bool GradientReducer::layout_current() const {
  if (buckets_.empty()) return params_.empty();
  for (const Bucket& b : buckets_)
    for (std::size_t i = 0; i < b.params.size(); ++i)
      if (static_cast<int64_t>(b.params[i]->grad().size()) != b.sizes[i]) return false;
  return true;
}

void GradientReducer::lay_out() {
  const int64_t element_bytes = payload_ == Precision::Bf16 ? 2 : 4;
  buckets_.clear();
  slots_.clear();
  for (auto it = params_.rbegin(); it != params_.rend(); ++it) {
    if (buckets_.empty() || buckets_.back().elements * element_bytes >= bucket_bytes_) buckets_.emplace_back();
    Bucket& b = buckets_.back();
    const auto size = static_cast<int64_t>((*it)->grad().size());
    b.params.push_back(*it);
    b.sizes.push_back(size);
    b.elements += size;
    slots_[*it] = {buckets_.size() - 1, false};
  }
  for (Bucket& b : buckets_) {
    if (payload_ == Precision::Bf16)
      b.b16.resize(static_cast<std::size_t>(b.elements));
    else
      b.f32.resize(static_cast<std::size_t>(b.elements));
  }
}

void GradientReducer::begin(double weight) {
  weight_ = weight;
  if (!layout_current()) lay_out();
  for (Bucket& b : buckets_) b.pending = static_cast<int>(b.params.size());
  for (auto& [param, slot] : slots_) slot.ready = false;
  next_launch_ = 0;
  const std::lock_guard lock(mutex_);
  queued_ = reduced_ = 0;
}

void GradientReducer::ready(std::span<Parameter* const> params) {
  for (Parameter* p : params) {
    const auto it = slots_.find(p);
    if (it == slots_.end() || it->second.ready) continue;
    it->second.ready = true;
    --buckets_[it->second.bucket].pending;
  }
  launch_ready_buckets();
}

void GradientReducer::launch_ready_buckets() {
  std::size_t launched = next_launch_;
  while (launched < buckets_.size() && buckets_[launched].pending == 0) ++launched;
  if (launched == next_launch_) return;
  next_launch_ = launched;
  if (!worker_comm_) return;  // finish() reduces them
  {
    const std::lock_guard lock(mutex_);
    queued_ = launched;
  }
  wake_.notify_one();
}

void GradientReducer::reduce(Bucket& b, Communicator& comm) {
  const auto w = static_cast<float>(weight_);
  int64_t offset = 0;
  for (Parameter* p : b.params) {
    const std::span<float> g = p->grad();
    if (payload_ == Precision::Bf16)
      for (std::size_t i = 0; i < g.size(); ++i) b.b16[static_cast<std::size_t>(offset) + i] = to_bf16(g[i] * w);
    else
      for (std::size_t i = 0; i < g.size(); ++i) b.f32[static_cast<std::size_t>(offset) + i] = g[i] * w;
    offset += static_cast<int64_t>(g.size());
  }
  if (payload_ == Precision::Bf16)
    comm.sum(std::span<Bf16>(b.b16));
  else
    comm.sum(std::span<float>(b.f32));
  offset = 0;
  for (Parameter* p : b.params) {
    const std::span<float> g = p->grad();
    if (payload_ == Precision::Bf16)
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = to_float(b.b16[static_cast<std::size_t>(offset) + i]);
    else
      std::copy_n(b.f32.begin() + offset, g.size(), g.begin());
    offset += static_cast<int64_t>(g.size());
  }
}

void GradientReducer::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || reduced_ < queued_; });
    if (reduced_ == queued_) return;  // stopping, nothing left
    const std::size_t index = reduced_;
    lock.unlock();
    try {
      if (!worker_error_) reduce(buckets_[index], *worker_comm_);
    } catch (...) {
      worker_error_ = std::current_exception();
    }
    lock.lock();
    ++reduced_;
    done_.notify_all();
  }
}

void GradientReducer::finish() {
  for (auto& [param, slot] : slots_)
    if (!slot.ready) {
      slot.ready = true;
      --buckets_[slot.bucket].pending;
    }
  launch_ready_buckets();
  const auto start = std::chrono::steady_clock::now();
  {
    const ProfileScope profile("gradient all-reduce wait");
    if (worker_comm_) {
      std::unique_lock lock(mutex_);
      done_.wait(lock, [&] { return reduced_ == buckets_.size(); });
      if (worker_error_) std::rethrow_exception(std::exchange(worker_error_, nullptr));
    } else {
      for (Bucket& b : buckets_) reduce(b, comm_);
    }
  }
  stats_ = {};
  stats_.wait_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double element_bytes = payload_ == Precision::Bf16 ? 2.0 : 4.0;
  stats_.buckets = static_cast<int64_t>(buckets_.size());
  for (const Parameter* p : params_) {
    const double sent = element_bytes * static_cast<double>(p->grad().size());
    const double dense = 4.0 * static_cast<double>(p->numel());
    stats_.payload_bytes += sent;
    stats_.dense_bytes += dense;
    if (p->storage() == Storage::Compressed) {
      stats_.sparse_payload_bytes += sent;
      stats_.sparse_dense_bytes += dense;
    }
  }
  // RigL's growth signal on its update steps: every rank must rank the same averaged gradient.
  const auto w = static_cast<float>(weight_);
  for (Parameter* p : params_) {
    if (!p->wants_dense_grad) continue;
    const std::span<float> g(p->dense_grad.data(), static_cast<std::size_t>(p->dense_grad.size()));
    for (float& x : g) x *= w;
    comm_.sum(g);
    stats_.dense_grad_bytes += 4.0 * static_cast<double>(g.size());
  }
}

}  // namespace sparsetrain
