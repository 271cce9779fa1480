#pragma once
// A POSIX file descriptor closed when it goes out of scope; -1 holds none. Code that must see
// close's result (a write's last error) closes it itself and sets fd to -1.
#include <unistd.h>

namespace sparsetrain {

struct UniqueFd {
  explicit UniqueFd(int descriptor) : fd(descriptor) {}
  ~UniqueFd() {
    if (fd >= 0) ::close(fd);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int fd;
};

}  // namespace sparsetrain
