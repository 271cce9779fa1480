#pragma once
// Implementation lists, oneDNN style: each kernel has an ordered list of implementations,
// fastest ISA first, ending in the reference. The first whose ISA is usable (see core/isa.h)
// and that does not reject the problem runs. With SPARSETRAIN_VERBOSE=dispatch the choice and
// every rejection reason are printed whenever the choice for a kernel changes.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/isa.h"
#include "core/verbose.h"

namespace sparsetrain {

template <typename Problem, typename Fn>
struct KernelImpl {
  const char* name;                              // e.g. "spmm_fwd_avx512"
  CpuIsa isa;                                    // minimum ISA
  const char* (*rejects)(const Problem&);        // nullptr or a function returning nullptr = accepted
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

// The list of one kernel, `kernel` declared in namespaces avx512, avx2 and ref with the same
// signature, no rejections: avx512 -> avx2 -> ref, each where the build compiled it.
template <typename Problem, typename Fn>
using KernelList = std::vector<KernelImpl<Problem, Fn>>;
#ifdef SPARSETRAIN_HAVE_AVX512
#define SPARSETRAIN_AVX512_ENTRY(kernel) {#kernel "_avx512", CpuIsa::Avx512, nullptr, avx512::kernel},
#else
#define SPARSETRAIN_AVX512_ENTRY(kernel)
#endif
#ifdef SPARSETRAIN_HAVE_AVX2
#define SPARSETRAIN_AVX2_ENTRY(kernel) {#kernel "_avx2", CpuIsa::Avx2, nullptr, avx2::kernel},
#else
#define SPARSETRAIN_AVX2_ENTRY(kernel)
#endif
// avx512 -> avx2 -> ref
#define SPARSETRAIN_KERNEL_LIST(kernel)                                   \
  {SPARSETRAIN_AVX512_ENTRY(kernel) SPARSETRAIN_AVX2_ENTRY(kernel) \
   {#kernel "_ref", CpuIsa::Ref, nullptr, ref::kernel}}

template <typename Problem, typename Fn>
const KernelImpl<Problem, Fn>& pick(std::string_view kernel, const KernelList<Problem, Fn>& list, const Problem& p) {
  return select_impl<Problem, Fn>(kernel, std::span<const KernelImpl<Problem, Fn>>(list), p);
}

}  // namespace sparsetrain
