#pragma once
// Implementation lists, oneDNN style: each kernel has an ordered list of implementations, one
// per (specialization, ISA) the vector code has, fastest ISA first, ending in the reference,
// which accepts every problem. The first whose ISA is usable (see core/isa.h) and that does not
// reject the problem runs, and its `run` is the whole kernel: no entry hands a problem on to
// another (the one reference code inside vector entries, the channel tail of two attention
// products, is described in attention_list.cpp). With SPARSETRAIN_VERBOSE=dispatch the choice
// and every rejection reason are printed whenever the choice for a kernel changes.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/isa.h"
#include "sparsetrain/core/verbose.h"

namespace sparsetrain {

template <typename Problem, typename Fn>
struct KernelImpl {
  const char* name;                        // e.g. "spmm_fwd_bcsr8_avx512"
  CpuIsa isa;                              // minimum ISA
  const char* (*rejects)(const Problem&);  // nullptr or a function returning nullptr = accepted
  Fn* run;
};

// Records the implementation chosen for `kernel` (printed when verbose and the choice changed).
void note_dispatch(std::string_view kernel, std::string_view chosen, const std::string& skipped);
// The implementation that ran last for `kernel`, or "" if it has not run.
std::string last_dispatch(std::string_view kernel);

template <typename Problem, typename Fn>
const KernelImpl<Problem, Fn>& select_impl(std::string_view kernel,
                                           std::span<const KernelImpl<Problem, Fn>> list,
                                           const Problem& problem) {
  std::string skipped;
  for (const auto& impl : list) {
    const char* why = nullptr;
    if (!isa_usable(impl.isa))
      why = "ISA not usable";
    else if (impl.rejects != nullptr)
      why = impl.rejects(problem);
    if (why == nullptr) {
      note_dispatch(kernel, impl.name, skipped);
      return impl;
    }
    if (verbose_dispatch()) skipped += fmt::format(" {}: {};", impl.name, why);
  }
  fail("{}: no implementation accepts this problem (skipped:{})", kernel, skipped);
}

template <typename Problem, typename Fn>
using KernelList = std::vector<KernelImpl<Problem, Fn>>;

// Writing a list. SPARSETRAIN_IMPL(isa, impl, rejects) is the entry for the function isa::impl
// (isa: avx512_bf16, avx512, avx2 or ref), named "<impl>_<isa>", with `rejects` nullptr or the function that
// says why it declines a problem. SPARSETRAIN_IMPL_LIST(entries, kernel) is the list of
// entries(isa), a macro giving one ISA's entries, for each vector ISA the build compiled, fastest
// first, then ref::kernel, which takes every problem:
//
//   #define SPMM_FWD(isa) SPARSETRAIN_IMPL(isa, spmm_fwd_csr, needs_block<1>)
//                         SPARSETRAIN_IMPL(isa, spmm_fwd_bcsr4, needs_block<4>) ...
//   const KernelList<BlockSparseView, SpmmFwdFn> kSpmmFwd = SPARSETRAIN_IMPL_LIST(SPMM_FWD, spmm_fwd);
//
// A kernel the vector code does not specialize has one entry per ISA, named "<kernel>_<isa>".
// Another data type is another list, with its own Fn, written the same way.
#define SPARSETRAIN_CPU_ISA_avx512_bf16 CpuIsa::Avx512Bf16
#define SPARSETRAIN_CPU_ISA_avx512 CpuIsa::Avx512
#define SPARSETRAIN_CPU_ISA_avx2 CpuIsa::Avx2
#define SPARSETRAIN_CPU_ISA_ref CpuIsa::Ref
#define SPARSETRAIN_IMPL(isa, impl, rejects) {#impl "_" #isa, SPARSETRAIN_CPU_ISA_##isa, rejects, isa::impl},
#ifdef SPARSETRAIN_HAVE_AVX512
#define SPARSETRAIN_IF_AVX512(...) __VA_ARGS__
#else
#define SPARSETRAIN_IF_AVX512(...)
#endif
#ifdef SPARSETRAIN_HAVE_AVX2
#define SPARSETRAIN_IF_AVX2(...) __VA_ARGS__
#else
#define SPARSETRAIN_IF_AVX2(...)
#endif
#define SPARSETRAIN_IMPL_LIST(entries, kernel) \
  { SPARSETRAIN_IF_AVX512(entries(avx512)) SPARSETRAIN_IF_AVX2(entries(avx2)) SPARSETRAIN_IMPL(ref, kernel, nullptr) }
// The same list after `first`, entries of avx512_bf16 (AVX-512 with AVX512-BF16), which are
// compiled wherever AVX-512 is.
#define SPARSETRAIN_IMPL_LIST_AFTER(first, entries, kernel)                                                          \
  {                                                                                                                  \
    SPARSETRAIN_IF_AVX512(first)                                                                                     \
    SPARSETRAIN_IF_AVX512(entries(avx512)) SPARSETRAIN_IF_AVX2(entries(avx2)) SPARSETRAIN_IMPL(ref, kernel, nullptr) \
  }

template <typename Problem, typename Fn>
const KernelImpl<Problem, Fn>& pick(std::string_view kernel, const KernelList<Problem, Fn>& list, const Problem& p) {
  return select_impl<Problem, Fn>(kernel, std::span<const KernelImpl<Problem, Fn>>(list), p);
}

}  // namespace sparsetrain
