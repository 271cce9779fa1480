#pragma once
// Dispatch tracing: SPARSETRAIN_VERBOSE=dispatch (or set_verbose_dispatch(true)) prints, on
// stderr, which implementation of each kernel ran and why faster ones were skipped.
#include <string_view>

namespace sparsetrain {

bool verbose_dispatch();
void set_verbose_dispatch(bool on);
void verbose_print(std::string_view line);

}  // namespace sparsetrain
