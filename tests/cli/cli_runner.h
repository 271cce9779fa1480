#pragma once
// Runs the built `sparsetrain` binary (path from the SPARSETRAIN_EXE compile definition) with
// given arguments and extra environment variables, capturing exit code, stdout and stderr apart.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sparsetrain::testing {

struct CliResult {
  int exit_code = -1;  // -1 when the process did not exit normally
  std::string out, err;
};

// env entries are "NAME=value" and replace any inherited variable of that name; SPARSETRAIN_*
// variables of the calling environment are never inherited, so results do not depend on it.
CliResult run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {});

// The same with stderr on a pseudo-terminal (what a user at a terminal sees there; the terminal
// turns "\n" into "\r\n"), for output that only appears on a terminal.
CliResult run_cli_with_terminal_stderr(const std::vector<std::string>& args, const std::vector<std::string>& env = {});

// What run_cli_controlled does besides running the command.
struct CliControl {
  // Runs this program instead of sparsetrain, e.g. mpirun, whose arguments then name sparsetrain.
  std::string program;
  uint64_t file_size_limit = 0;      // RLIMIT_FSIZE of the process in bytes; 0 leaves it as inherited
  uint64_t address_space_limit = 0;  // RLIMIT_AS of the process in bytes (ulimit -v); 0 leaves it as inherited
  // Called with the process id right after it starts; the run then waits for the process to end.
  std::function<void(pid_t)> while_running;
};
CliResult run_cli_controlled(const std::vector<std::string>& args, const std::vector<std::string>& env,
                             const CliControl& control);

// Starts the command, waits until ready() holds (polled every 20 ms, 2 minutes at most), sends it
// `signal_number` and returns what it did.
CliResult run_cli_signalled(const std::vector<std::string>& args, const std::vector<std::string>& env,
                            const std::function<bool()>& ready, int signal_number);

}  // namespace sparsetrain::testing
