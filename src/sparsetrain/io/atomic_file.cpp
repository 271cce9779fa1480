#include "sparsetrain/io/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/unique_fd.h"

namespace sparsetrain {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

// 0, or the errno of the failed write; a write that makes no progress counts as ENOSPC.
int write_all(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ENOSPC;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// A rename or unlink is durable once the directory entry is; file systems that cannot fsync a
// directory say EINVAL, and there is nothing more to do on them.
void sync_directory_of(const std::string& path, std::string_view done) {
  const std::string dir = directory_of(path);
  const UniqueFd directory{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (directory.fd < 0) fail("{}: {}, but cannot open its directory '{}': {}", path, done, dir, errno_text(errno));
  if (::fsync(directory.fd) != 0 && errno != EINVAL)
    fail("{}: {}, but cannot fsync its directory '{}': {}", path, done, dir, errno_text(errno));
}

}  // namespace

void write_file_atomically(const std::string& path, std::span<const ByteRange> pieces) {
  const std::string temp = fmt::format("{}.tmp-{}", path, ::getpid());
  UniqueFd file{::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  if (file.fd < 0) fail("{}: cannot create the temporary file '{}': {}", path, temp, errno_text(errno));
  const auto give_up = [&](std::string_view what, int err) {
    ::close(file.fd);
    file.fd = -1;
    ::unlink(temp.c_str());
    fail("{}: {} '{}': {}", path, what, temp, errno_text(err));
  };
  int err = 0;
  for (const ByteRange& piece : pieces) {
    if (err) break;
    err = write_all(file.fd, piece.data, piece.size);
  }
  if (err) give_up("cannot write the temporary file", err);
  if (::fsync(file.fd) != 0) give_up("cannot fsync the temporary file", errno);
  const int closed = ::close(file.fd);
  file.fd = -1;
  if (closed != 0) {
    const int close_err = errno;
    ::unlink(temp.c_str());
    fail("{}: cannot close the temporary file '{}': {}", path, temp, errno_text(close_err));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int rename_err = errno;
    ::unlink(temp.c_str());
    fail("{}: cannot rename the temporary file '{}' over it: {}", path, temp, errno_text(rename_err));
  }
  sync_directory_of(path, "written");
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const ByteRange piece{text.data(), text.size()};
  write_file_atomically(path, std::span<const ByteRange>(&piece, 1));
}

bool remove_file_durably(const std::string& path) {
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return false;
    fail("{}: cannot remove: {}", path, errno_text(errno));
  }
  sync_directory_of(path, "removed");
  return true;
}

void create_output_directory(const std::string& dir, const std::string& option) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
    fail("{} {}: cannot create the directory: a file is in the way", option, dir);
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("{} {}: cannot create the directory: {}", option, dir, ec.message());
}

}  // namespace sparsetrain
