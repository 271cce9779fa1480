#include "cli_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

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

// Reads the terminal's master side until the child has exited and everything is drained (EIO
// once the last slave descriptor is closed).
std::string drain_terminal(int master, pid_t pid, int& status) {
  std::string text;
  bool exited = false;
  for (;;) {
    pollfd p{master, POLLIN, 0};
    if (poll(&p, 1, 50) > 0) {
      char buffer[4096];
      const ssize_t n = read(master, buffer, sizeof buffer);
      if (n > 0) {
        text.append(buffer, static_cast<std::size_t>(n));
        continue;
      }
      if (exited) break;
    } else if (exited) {
      break;
    }
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) exited = true;
  }
  return text;
}

CliResult run(const std::vector<std::string>& args, const std::vector<std::string>& env, bool terminal_stderr,
              const CliControl& control = {}) {
  const std::string dir = ::testing::TempDir();
  const std::string out_path = dir + "sparsetrain_cli_out_" + std::to_string(getpid());
  const std::string err_path = dir + "sparsetrain_cli_err_" + std::to_string(getpid());

  std::vector<std::string> argv_text = {control.program.empty() ? std::string(SPARSETRAIN_EXE) : control.program};
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
  int master = -1;
  if (terminal_stderr) {
    master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) throw std::runtime_error("no pseudo-terminal");
    posix_spawn_file_actions_addopen(&files, STDERR_FILENO, ptsname(master), O_RDWR | O_NOCTTY, 0);
  } else {
    posix_spawn_file_actions_addopen(&files, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  }
  // The child inherits the resource limits in force when it starts: this process lowers its own
  // for that moment (it writes nothing meanwhile).
  struct Limit {
    int resource;
    uint64_t value;
    rlimit inherited;
  };
  Limit limits[] = {{RLIMIT_FSIZE, control.file_size_limit, {}}, {RLIMIT_AS, control.address_space_limit, {}}};
  for (Limit& l : limits) {
    getrlimit(l.resource, &l.inherited);
    const rlimit lowered{l.value, l.inherited.rlim_max};
    if (l.value > 0 && setrlimit(l.resource, &lowered) != 0) throw std::runtime_error("cannot lower a resource limit");
  }
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), envp.data());
  for (const Limit& l : limits)
    if (l.value > 0) setrlimit(l.resource, &l.inherited);
  posix_spawn_file_actions_destroy(&files);
  if (spawned != 0) throw std::runtime_error("cannot start " + argv_text[0]);
  if (control.while_running) control.while_running(pid);
  int status = 0;
  CliResult result;
  if (terminal_stderr) {
    result.err = drain_terminal(master, pid, status);
    close(master);
  } else {
    waitpid(pid, &status, 0);
    result.err = slurp(err_path);
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = slurp(out_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return result;
}

}  // namespace

CliResult run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  return run(args, env, false);
}

CliResult run_cli_with_terminal_stderr(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  return run(args, env, true);
}

CliResult run_cli_controlled(const std::vector<std::string>& args, const std::vector<std::string>& env,
                             const CliControl& control) {
  return run(args, env, false, control);
}

CliResult run_cli_signalled(const std::vector<std::string>& args, const std::vector<std::string>& env,
                            const std::function<bool()>& ready, int signal_number) {
  CliControl control;
  control.while_running = [&](pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!ready() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    kill(pid, signal_number);
  };
  return run(args, env, false, control);
}

}  // namespace sparsetrain::testing
