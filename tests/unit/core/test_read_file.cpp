// read_file, the reader of every input file: exact bytes of regular files of any size, pipes
// read to their end, and the messages for a missing path and a directory.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <thread>

#include "error_of.h"
#include "sparsetrain/core/read_file.h"
#include "temp_dir.h"

namespace sparsetrain {
namespace {

using testing::error_of;
using testing::TempDir;

// Bytes 0..255 repeated and offset by the position's high bits, so no two 64 KB chunks match.
std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + (i >> 16)) & 0xff);
  return s;
}

TEST(ReadFile, ReturnsEveryByteOfRegularFiles) {
  const TempDir dir;
  for (const std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{65535}, std::size_t{65536}, std::size_t{300001}}) {
    SCOPED_TRACE(n);
    const std::string bytes = pattern(n);
    EXPECT_EQ(read_file(dir.write(std::to_string(n) + ".bin", bytes).string()), bytes);
  }
}

// A pipe reports size 0; its content arrives in pieces and is read up to the writer's close.
TEST(ReadFile, ReadsAPipeToItsEnd) {
  const TempDir dir;
  const std::string path = (dir.path() / "fifo").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  const std::string bytes = pattern(200003);  // past the first 64 KB buffer, and its doubling
  std::thread writer([&] {
    std::ofstream out(path, std::ios::binary);
    for (std::size_t at = 0; at < bytes.size(); at += 1000) out << bytes.substr(at, 1000) << std::flush;
  });
  const std::string got = read_file(path);
  writer.join();
  EXPECT_EQ(got.size(), bytes.size());
  EXPECT_EQ(got, bytes);
}

TEST(ReadFile, MissingPathsAndDirectoriesAreErrorsNamingThePath) {
  const TempDir dir;
  const std::string missing = (dir.path() / "none.yaml").string();
  EXPECT_EQ(error_of([&] { read_file(missing); }), missing + ": cannot open: No such file or directory");
  EXPECT_EQ(error_of([&] { read_file(dir.path().string()); }),
            dir.path().string() + ": is a directory; expected a file");
}

}  // namespace
}  // namespace sparsetrain
