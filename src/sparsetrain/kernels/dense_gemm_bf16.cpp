#include "sparsetrain/kernels/dense_gemm_bf16.h"

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <array>
#include <bit>
#include <memory>
#include <string>
#include <unordered_map>

#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/verbose.h"
#include "sparsetrain/kernels/dense_gemm.h"
#include "sparsetrain/kernels/dense_isa.h"
#include "sparsetrain/kernels/kernel_list.h"

namespace sparsetrain {

namespace {

// One matmul as oneDNN sees it: C [m x n] = alpha * op(A) [m x k] op(B) [k x n] (+ bias [n])
// (+ beta * C). Transposes are strides: A^T stored [k x m] with row stride lda is A with strides
// {1, lda}. Everything a primitive is specialised for is in the key.
struct MatmulKey {
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  bool trans_a = false, trans_b = false, bias = false;
  uint32_t alpha = 0, beta = 0;  // the floats' bits
  bool operator==(const MatmulKey&) const = default;
};

struct MatmulKeyHash {
  std::size_t operator()(const MatmulKey& key) const {
    std::size_t h = 0;
    auto mix = [&h](uint64_t v) { h ^= std::hash<uint64_t>{}(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    for (int64_t v : {key.m, key.n, key.k, key.lda, key.ldb, key.ldc}) mix(static_cast<uint64_t>(v));
    mix((uint64_t{key.trans_a} << 2) | (uint64_t{key.trans_b} << 1) | uint64_t{key.bias});
    mix((uint64_t{key.alpha} << 32) | key.beta);
    return h;
  }
};

float alpha_of(const MatmulKey& key) { return std::bit_cast<float>(key.alpha); }
float beta_of(const MatmulKey& key) { return std::bit_cast<float>(key.beta); }

// What a failed call names: the caller's product (e.g. "dense_linear_fwd_bf16 Y [37 x 29] = X
// [37 x 61] W^T"), made only when something failed.
template <typename Describe>
[[noreturn]] void fail_onednn(const Describe& describe, const MatmulKey& key, const char* call, dnnl_status_t status) {
  fail(
      "{}: oneDNN {} failed for the bf16 matmul [{} x {}]{} x [{} x {}]{} -> fp32 [{} x {}] "
      "(lda {}, ldb {}, ldc {}{}{}): {} (status {}); oneDNN {} dispatches to {}{}",
      describe(), call, key.m, key.k, key.trans_a ? " (A transposed)" : "", key.k, key.n,
      key.trans_b ? " (B transposed)" : "", key.m, key.n, key.lda, key.ldb, key.ldc, key.bias ? ", fp32 bias" : "",
      beta_of(key) != 0.0f ? fmt::format(", sum post-op x {}", beta_of(key)) : std::string(), dnnl_status2str(status),
      static_cast<int>(status), onednn_version(), dense_isa(),
      status == dnnl_unimplemented ? " and has no bf16 matmul for it (oneDNN 2.6 has them at avx512_core and above)"
                                   : "");
}

dnnl_engine_t engine() {
  // Created once and kept for the process (primitives created on it live in caches of threads
  // that may outlive any owner of it).
  static const dnnl_engine_t cpu = [] {
    dnnl_engine_t e = nullptr;
    const dnnl_status_t status = dnnl_engine_create(&e, dnnl_cpu, 0);
    if (status != dnnl_success)
      fail("oneDNN cannot create its CPU engine: {} (status {})", dnnl_status2str(status), static_cast<int>(status));
    return e;
  }();
  return cpu;
}

// A primitive with its descriptor and memory objects whose data handles are set per call.
struct Matmul {
  dnnl_primitive_desc_t pd = nullptr;
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_t src = nullptr, weights = nullptr, dst = nullptr, bias = nullptr, scratchpad = nullptr;
  std::size_t scratchpad_bytes = 0;

  Matmul() = default;
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;
  ~Matmul() {
    for (dnnl_memory_t m : {src, weights, dst, bias, scratchpad})
      if (m != nullptr) dnnl_memory_destroy(m);
    if (primitive != nullptr) dnnl_primitive_destroy(primitive);
    if (pd != nullptr) dnnl_primitive_desc_destroy(pd);
  }
};

// Each thread that calls in keeps its own stream, primitives (with their memory objects, whose
// handles change per call) and scratchpad, so calls from several threads never share mutable
// oneDNN state. oneDNN's own primitive cache (on by default in 2.6, 1024 entries) makes a second
// thread's primitive for a known shape cheap: its JIT code is shared.
//
// Why a cache of our own on top of oneDNN's: a primitive descriptor and a primitive fetched from
// oneDNN's cache cost ~2 us per call with three memory objects (1000 calls, 2048 x 3072 x 768 and
// 37 x 29 x 61 alike), against ~0.4-0.7 ms for a new one (the JIT, measured with
// ONEDNN_PRIMITIVE_CACHE_CAPACITY=0) and ~13 ms for the first bf16 matmul of a process; a lookup
// here is a hash of the key. The products here take from tens of microseconds (attention heads)
// to tens of milliseconds.
constexpr std::size_t kMaxCachedMatmuls = 256;

struct ThreadState {
  dnnl_stream_t stream = nullptr;
  std::unordered_map<MatmulKey, std::unique_ptr<Matmul>, MatmulKeyHash> matmuls;
  AlignedBuffer<uint8_t> scratchpad;
  ThreadState() = default;
  ThreadState(const ThreadState&) = delete;
  ThreadState& operator=(const ThreadState&) = delete;
  ~ThreadState() {
    matmuls.clear();
    if (stream != nullptr) dnnl_stream_destroy(stream);
  }
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

dnnl_memory_desc_t matrix_desc(int64_t rows, int64_t cols, int64_t ld, bool transposed, dnnl_data_type_t type) {
  // [rows x cols] stored row-major with row stride ld, or (transposed) its transpose stored
  // row-major: element (r, c) at c * ld + r.
  const dnnl_dims_t dims = {rows, cols};
  const dnnl_dims_t strides = {transposed ? 1 : ld, transposed ? ld : 1};
  dnnl_memory_desc_t md;
  // Cannot fail for positive dims and strides, which the callers have checked.
  dnnl_memory_desc_init_by_strides(&md, 2, dims, type, strides);
  return md;
}

template <typename Describe>
std::unique_ptr<Matmul> create_matmul(const MatmulKey& key, const Describe& describe) {
  auto mm = std::make_unique<Matmul>();
  auto check = [&](dnnl_status_t status, const char* call) {
    if (status != dnnl_success) fail_onednn(describe, key, call, status);
  };
  const dnnl_memory_desc_t a = matrix_desc(key.m, key.k, key.lda, key.trans_a, dnnl_bf16);
  const dnnl_memory_desc_t b = matrix_desc(key.k, key.n, key.ldb, key.trans_b, dnnl_bf16);
  const dnnl_memory_desc_t c = matrix_desc(key.m, key.n, key.ldc, false, dnnl_f32);
  const dnnl_memory_desc_t bias = matrix_desc(1, key.n, key.n, false, dnnl_f32);
  dnnl_matmul_desc_t desc;
  check(dnnl_matmul_desc_init(&desc, &a, &b, key.bias ? &bias : nullptr, &c), "dnnl_matmul_desc_init");

  dnnl_primitive_attr_t attr = nullptr;
  check(dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create");
  const std::unique_ptr<dnnl_primitive_attr, decltype(&dnnl_primitive_attr_destroy)> attr_owner(
      attr, dnnl_primitive_attr_destroy);
  check(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user), "scratchpad mode");
  if (alpha_of(key) != 1.0f) {
    const float alpha = alpha_of(key);
    check(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha), "dnnl_primitive_attr_set_output_scales");
  }
  if (beta_of(key) != 0.0f) {
    dnnl_post_ops_t post_ops = nullptr;
    check(dnnl_post_ops_create(&post_ops), "dnnl_post_ops_create");
    const std::unique_ptr<dnnl_post_ops, decltype(&dnnl_post_ops_destroy)> post_ops_owner(post_ops,
                                                                                          dnnl_post_ops_destroy);
    check(dnnl_post_ops_append_sum(post_ops, beta_of(key)), "dnnl_post_ops_append_sum");
    check(dnnl_primitive_attr_set_post_ops(attr, post_ops), "dnnl_primitive_attr_set_post_ops");
  }
  check(dnnl_primitive_desc_create(&mm->pd, &desc, attr, engine(), nullptr), "dnnl_primitive_desc_create");
  check(dnnl_primitive_create(&mm->primitive, mm->pd), "dnnl_primitive_create");

  const dnnl_memory_desc_t* scratchpad = dnnl_primitive_desc_query_md(mm->pd, dnnl_query_scratchpad_md, 0);
  mm->scratchpad_bytes = scratchpad != nullptr ? dnnl_memory_desc_get_size(scratchpad) : 0;
  check(dnnl_memory_create(&mm->src, &a, engine(), DNNL_MEMORY_NONE), "dnnl_memory_create");
  check(dnnl_memory_create(&mm->weights, &b, engine(), DNNL_MEMORY_NONE), "dnnl_memory_create");
  check(dnnl_memory_create(&mm->dst, &c, engine(), DNNL_MEMORY_NONE), "dnnl_memory_create");
  if (key.bias) check(dnnl_memory_create(&mm->bias, &bias, engine(), DNNL_MEMORY_NONE), "dnnl_memory_create");
  if (mm->scratchpad_bytes > 0)
    check(dnnl_memory_create(&mm->scratchpad, scratchpad, engine(), DNNL_MEMORY_NONE), "dnnl_memory_create");
  return mm;
}

// The bf16 matrix [rows x cols] (row stride ld) widened to fp32, contiguous, in buf.
const float* widen(const Bf16* src, int64_t rows, int64_t cols, int64_t ld, AlignedBuffer<float>& buf) {
  buf.resize(static_cast<std::size_t>(rows * cols));
  parallel_ranges(rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) to_float(src + r * ld, buf.data() + r * cols, cols);
  });
  return buf.data();
}

// Whether oneDNN multiplies bf16 natively (AVX512-BF16's vdpbf16ps) under the ISA in force. Without
// it, its bf16 matmul is no faster than fp32 or missing: oneDNN 2.6 emulates bf16 at avx512_core,
// at 76 GFLOP/s on the benchmark GPT's head against 187-223 for sgemm (bench train, 2026-11-27,
// Zen 4), and has none below AVX-512.
bool onednn_native_bf16() {
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

// The same product without native bf16: the bf16 operands widened to fp32 and multiplied by
// oneDNN's sgemm. A product of two bf16 values is exact in fp32, so this differs from a bf16
// matmul only in the order of the fp32 sums; it costs about what fp32 does, plus the widening.
void widened_matmul(const MatmulKey& key, const Bf16* a, const Bf16* b, const float* bias, float* c) {
  thread_local AlignedBuffer<float> wide_a, wide_b;
  const int64_t a_rows = key.trans_a ? key.k : key.m, a_cols = key.trans_a ? key.m : key.k;
  const int64_t b_rows = key.trans_b ? key.n : key.k, b_cols = key.trans_b ? key.k : key.n;
  const float* wa = widen(a, a_rows, a_cols, key.lda, wide_a);
  const float* wb = widen(b, b_rows, b_cols, key.ldb, wide_b);
  float beta = beta_of(key);
  if (key.bias) {  // C = beta C + bias first, then the product added
    for (int64_t i = 0; i < key.m; ++i) {
      float* row = c + i * key.ldc;
      for (int64_t j = 0; j < key.n; ++j) row[j] = (beta == 0.0f ? 0.0f : beta * row[j]) + bias[j];
    }
    beta = 1.0f;
  }
  gemm(key.trans_a, key.trans_b, key.m, key.n, key.k, alpha_of(key), wa, a_cols, wb, b_cols, beta, c, key.ldc);
}

// C = alpha * op(A) op(B) (+ bias) (+ beta * C) through the calling thread's primitive for key,
// or widened_matmul without native bf16 (dispatch kernel "dense_bf16" says which ran).
template <typename Describe>
void run_matmul(const MatmulKey& key, const Bf16* a, const Bf16* b, const float* bias, float* c,
                const Describe& describe) {
  if (!onednn_native_bf16()) {
    note_dispatch("dense_bf16", "widened_sgemm",
                  verbose_dispatch() ? fmt::format(" onednn_matmul: no native bf16 at {};", dense_isa()) : "");
    widened_matmul(key, a, b, bias, c);
    return;
  }
  ThreadState& state = thread_state();
  auto check = [&](dnnl_status_t status, const char* call) {
    if (status != dnnl_success) fail_onednn(describe, key, call, status);
  };
  if (state.stream == nullptr)
    check(dnnl_stream_create(&state.stream, engine(), dnnl_stream_in_order), "dnnl_stream_create");
  auto found = state.matmuls.find(key);
  if (found == state.matmuls.end()) {
    // Shapes come from a model's few layers; more than this many means shapes that vary (a
    // sweep), and starting over keeps the cache bounded (oneDNN's cache still has the code).
    if (state.matmuls.size() >= kMaxCachedMatmuls) state.matmuls.clear();
    found = state.matmuls.emplace(key, create_matmul(key, describe)).first;
  }
  note_dispatch("dense_bf16", "onednn_matmul", "");
  Matmul& mm = *found->second;
  // oneDNN reads through const data handles without writing them.
  check(dnnl_memory_set_data_handle(mm.src, const_cast<Bf16*>(a)), "dnnl_memory_set_data_handle");
  check(dnnl_memory_set_data_handle(mm.weights, const_cast<Bf16*>(b)), "dnnl_memory_set_data_handle");
  check(dnnl_memory_set_data_handle(mm.dst, c), "dnnl_memory_set_data_handle");
  std::array<dnnl_exec_arg_t, 5> args = {
      {{DNNL_ARG_SRC, mm.src}, {DNNL_ARG_WEIGHTS, mm.weights}, {DNNL_ARG_DST, mm.dst}}};
  int nargs = 3;
  if (key.bias) {
    check(dnnl_memory_set_data_handle(mm.bias, const_cast<float*>(bias)), "dnnl_memory_set_data_handle");
    args[nargs++] = {DNNL_ARG_BIAS, mm.bias};
  }
  if (mm.scratchpad != nullptr) {
    state.scratchpad.resize(mm.scratchpad_bytes);
    check(dnnl_memory_set_data_handle(mm.scratchpad, state.scratchpad.data()), "dnnl_memory_set_data_handle");
    args[nargs++] = {DNNL_ARG_SCRATCHPAD, mm.scratchpad};
  }
  check(dnnl_primitive_execute(mm.primitive, state.stream, nargs, args.data()), "dnnl_primitive_execute");
  check(dnnl_stream_wait(state.stream), "dnnl_stream_wait");
}

MatmulKey make_key(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, int64_t lda, int64_t ldb,
                   float beta, int64_t ldc, bool bias) {
  return {
      m, n, k, lda, ldb, ldc, trans_a, trans_b, bias, std::bit_cast<uint32_t>(alpha), std::bit_cast<uint32_t>(beta)};
}

// C = beta * C for an empty inner dimension (oneDNN does nothing for a zero-sized problem).
void scale_output(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    if (beta == 0.0f)
      std::fill(row, row + n, 0.0f);
    else
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
  }
}

}  // namespace

void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const Bf16* a, int64_t lda,
               const Bf16* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  auto describe = [&] {
    return fmt::format("gemm_bf16 C [{} x {}] = {} op(A) op(B) + {} C, op(A) = A{} [{} x {}], op(B) = B{} [{} x {}]", m,
                       n, alpha, beta, trans_a ? "^T" : "", m, k, trans_b ? "^T" : "", k, n);
  };
  if (m < 0 || n < 0 || k < 0) fail("{}: negative dimensions", describe());
  const int64_t a_cols = trans_a ? m : k, b_cols = trans_b ? k : n;
  if (lda < std::max<int64_t>(a_cols, 1) || ldb < std::max<int64_t>(b_cols, 1) || ldc < std::max<int64_t>(n, 1))
    fail("{}: leading dimensions lda {}, ldb {}, ldc {} are below the row lengths {}, {}, {}", describe(), lda, ldb,
         ldc, a_cols, b_cols, n);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    scale_output(m, n, beta, c, ldc);
    return;
  }
  run_matmul(make_key(trans_a, trans_b, m, n, k, alpha, lda, ldb, beta, ldc, false), a, b, nullptr, c, describe);
}

void round_to_bf16(ConstMatrixView src, Bf16Matrix& dst, float* sums, bool accumulate) {
  dst.rows = src.rows;
  dst.cols = src.cols;
  dst.values.resize(static_cast<std::size_t>(src.rows * src.cols));
  Bf16* out = dst.values.data();
  column_sums_visiting(src, sums, accumulate, [&](int64_t t, int64_t begin, int64_t end) {
    const float* row = src.row(t);
    Bf16* rounded = out + t * src.cols;
    for (int64_t n = begin; n < end; ++n) rounded[n] = to_bf16(row[n]);
  });
}

void dense_linear_fwd_bf16(ConstBf16MatrixView x, ConstBf16MatrixView w, const float* bias, MatrixView y) {
  auto describe = [&] {
    return fmt::format("dense_linear_fwd_bf16 Y [{} x {}] = X [{} x {}] W^T{}, W [{} x {}]", y.rows, y.cols, x.rows,
                       x.cols, bias != nullptr ? " + b" : "", w.rows, w.cols);
  };
  if (x.cols != w.cols || y.rows != x.rows || y.cols != w.rows) fail("{}: the shapes do not fit", describe());
  if (y.rows == 0 || y.cols == 0) return;
  if (x.cols == 0) {
    for (int64_t t = 0; t < y.rows; ++t) {
      if (bias != nullptr)
        std::copy(bias, bias + y.cols, y.row(t));
      else
        std::fill(y.row(t), y.row(t) + y.cols, 0.0f);
    }
    return;
  }
  // Y [T x N] = X [T x K] (W^T) [K x N]: W [N x K] as stored is (W^T) with strides {1, ld}.
  run_matmul(make_key(false, true, x.rows, w.rows, x.cols, 1.0f, x.ld, w.ld, 0.0f, y.ld, bias != nullptr), x.data,
             w.data, bias, y.data, describe);
}

void dense_linear_bwd_data_bf16(ConstBf16MatrixView dy, ConstBf16MatrixView w, MatrixView dx) {
  auto describe = [&] {
    return fmt::format("dense_linear_bwd_data_bf16 dX [{} x {}] = dY [{} x {}] W, W [{} x {}]", dx.rows, dx.cols,
                       dy.rows, dy.cols, w.rows, w.cols);
  };
  if (dy.cols != w.rows || dx.rows != dy.rows || dx.cols != w.cols) fail("{}: the shapes do not fit", describe());
  if (dx.rows == 0 || dx.cols == 0) return;
  if (dy.cols == 0) {
    scale_output(dx.rows, dx.cols, 0.0f, dx.data, dx.ld);
    return;
  }
  run_matmul(make_key(false, false, dy.rows, w.cols, dy.cols, 1.0f, dy.ld, w.ld, 0.0f, dx.ld, false), dy.data, w.data,
             nullptr, dx.data, describe);
}

void dense_linear_bwd_weights_bf16(ConstBf16MatrixView dy, ConstBf16MatrixView x, MatrixView dw, bool accumulate) {
  auto describe = [&] {
    return fmt::format("dense_linear_bwd_weights_bf16 dW [{} x {}] {}= dY^T X, dY [{} x {}], X [{} x {}]", dw.rows,
                       dw.cols, accumulate ? "+" : "", dy.rows, dy.cols, x.rows, x.cols);
  };
  if (dy.rows != x.rows || dw.rows != dy.cols || dw.cols != x.cols) fail("{}: the shapes do not fit", describe());
  if (dw.rows == 0 || dw.cols == 0) return;
  if (dy.rows == 0) {
    if (!accumulate) scale_output(dw.rows, dw.cols, 0.0f, dw.data, dw.ld);
    return;
  }
  // dW [N x K] = (dY^T) [N x T] X [T x K]: dY [T x N] is dY^T with strides {1, ld}.
  run_matmul(make_key(true, false, dy.cols, x.cols, dy.rows, 1.0f, dy.ld, x.ld, accumulate ? 1.0f : 0.0f, dw.ld, false),
             dy.data, x.data, nullptr, dw.data, describe);
}

}  // namespace sparsetrain
