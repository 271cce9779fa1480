#include "sparsetrain/core/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/unique_fd.h"

namespace sparsetrain {

std::string read_file(const std::string& path) {
  const UniqueFd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) fail("{}: cannot stat: {}", path, std::strerror(errno));
  // A directory opens read-only and would otherwise read as an empty file (or fail with EISDIR).
  if (S_ISDIR(st.st_mode)) fail("{}: is a directory; expected a file", path);
  // A regular file's size, plus one byte to see its end without growing; a pipe's size is 0,
  // and it grows by doubling.
  std::string text(S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) + 1 : size_t{1} << 16, '\0');
  size_t done = 0;
  for (;;) {
    if (done == text.size()) text.resize(2 * done);
    const ssize_t n = ::read(file.fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("{}: cannot read at offset {}: {}", path, done, std::strerror(errno));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  text.resize(done);
  return text;
}

}  // namespace sparsetrain
