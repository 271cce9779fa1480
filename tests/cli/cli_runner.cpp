#include "cli_runner.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

extern char** environ;

namespace sparsetrain::testing {

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

CliResult run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  const std::string dir = ::testing::TempDir();
  const std::string out_path = dir + "sparsetrain_cli_out_" + std::to_string(getpid());
  const std::string err_path = dir + "sparsetrain_cli_err_" + std::to_string(getpid());

  std::vector<std::string> argv_text = {SPARSETRAIN_EXE};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);

  auto overridden = [&](const std::string& entry) {
    if (entry.rfind("SPARSETRAIN_", 0) == 0) return true;
    const std::string name = entry.substr(0, entry.find('=') + 1);
    for (const auto& e : env)
      if (e.rfind(name, 0) == 0) return true;
    return false;
  };
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e)
    if (!overridden(*e)) env_text.emplace_back(*e);
  env_text.insert(env_text.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&files, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&files);
  if (spawned != 0) throw std::runtime_error("cannot start " + argv_text[0]);
  int status = 0;
  waitpid(pid, &status, 0);

  CliResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return result;
}

}  // namespace sparsetrain::testing
