// read_file, the reader of every input file: exact bytes of regular files of any size, pipes
// read to their end, and the messages for a missing path and a directory.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "core/read_file.h"
#include "error_of.h"

namespace sparsetrain {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

class ReadFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sparsetrain_read_file_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  // Bytes 0..255 repeated and offset by the position's high bits, so no two 64 KB chunks match.
  static std::string pattern(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + (i >> 16)) & 0xff);
    return s;
  }

  fs::path dir_;
};

TEST_F(ReadFile, ReturnsEveryByteOfRegularFiles) {
  for (const std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{65535}, std::size_t{65536}, std::size_t{300001}}) {
    SCOPED_TRACE(n);
    const std::string bytes = pattern(n);
    EXPECT_EQ(read_file(write(std::to_string(n) + ".bin", bytes)), bytes);
  }
}

// A pipe reports size 0; its content arrives in pieces and is read up to the writer's close.
TEST_F(ReadFile, ReadsAPipeToItsEnd) {
  const std::string path = (dir_ / "fifo").string();
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

TEST_F(ReadFile, MissingPathsAndDirectoriesAreErrorsNamingThePath) {
  const std::string missing = (dir_ / "none.yaml").string();
  EXPECT_EQ(error_of([&] { read_file(missing); }), missing + ": cannot open: No such file or directory");
  EXPECT_EQ(error_of([&] { read_file(dir_.string()); }), dir_.string() + ": is a directory; expected a file");
}

}  // namespace
}  // namespace sparsetrain
