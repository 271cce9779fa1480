#include "sparsetrain/core/verbose.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace sparsetrain {

namespace {
std::atomic<int> verbose_state{-1};
std::mutex print_mutex;
}  // namespace

bool verbose_dispatch() {
  int state = verbose_state.load(std::memory_order_relaxed);
  if (state < 0) {
    const char* value = std::getenv("SPARSETRAIN_VERBOSE");
    state = (value != nullptr && std::strcmp(value, "dispatch") == 0) ? 1 : 0;
    verbose_state.store(state, std::memory_order_relaxed);
  }
  return state == 1;
}

void set_verbose_dispatch(bool on) { verbose_state.store(on ? 1 : 0); }

void verbose_print(std::string_view line) {
  std::lock_guard lock(print_mutex);
  std::fprintf(stderr, "sparsetrain: %.*s\n", static_cast<int>(line.size()), line.data());
}

}  // namespace sparsetrain
