#pragma once
// Shared by the fuzz targets: the input budget, a scratch directory for readers that take a
// path, and the check that stops a run when a reader breaks one of its own promises.
//
// A target calls a reader on the input and catches sparsetrain::Error only: that is how every
// reader reports a bad file. Anything else (another exception, a crash, a sanitizer report, a
// broken promise checked with FUZZ_CHECK) ends the run as a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

namespace sparsetrain::fuzz {

// Larger inputs are skipped: they slow the search without reaching new code. scripts/fuzz.sh
// passes the same -max_len.
inline constexpr std::size_t kMaxInputBytes = std::size_t{1} << 16;

inline std::string_view as_text(const uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A directory of this process's own under $TMPDIR (or /tmp), removed at exit.
class ScratchDir {
 public:
  ScratchDir() {
    path_ = std::filesystem::temp_directory_path() / ("sparsetrain-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Replaces the file `name` with `bytes` and returns its path.
  std::string write(const std::string& name, std::string_view bytes) const {
    const std::filesystem::path p = path_ / name;
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::fprintf(stderr, "fuzz: cannot write %s\n", p.c_str());
      std::abort();
    }
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace sparsetrain::fuzz

// A promise of the reader that held for the input: reported like a crash when it does not.
#define FUZZ_CHECK(condition)                                                                 \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)
