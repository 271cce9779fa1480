#include "sparsetrain/kernels/kernel_list.h"

#include <map>
#include <mutex>

namespace sparsetrain {

namespace {
std::mutex mutex;
std::map<std::string, std::string, std::less<>> last;
}  // namespace

std::string last_dispatch(std::string_view kernel) {
  std::lock_guard lock(mutex);
  auto it = last.find(kernel);
  return it == last.end() ? std::string() : it->second;
}

void note_dispatch(std::string_view kernel, std::string_view chosen, const std::string& skipped) {
  std::lock_guard lock(mutex);
  auto it = last.find(kernel);
  if (it != last.end() && it->second == chosen) return;
  last[std::string(kernel)] = std::string(chosen);
  if (!verbose_dispatch()) return;
  verbose_print(fmt::format("dispatch: {} -> {} (isa cap {}, cpu {}){}{}", kernel, chosen,
                            isa_name(max_isa()), isa_name(cpu_isa()), skipped.empty() ? "" : " skipped:",
                            skipped));
}

}  // namespace sparsetrain
