#pragma once
// The one way sparsetrain reads a whole input file (configs, corpora, tokenizer files,
// checkpoints, metrics), so every reader refuses the same things with the same messages.
#include <string>

namespace sparsetrain {

// The whole content of the file at `path`, read to its end, so a pipe (`--params <(...)`,
// /dev/stdin) works as well as a regular file. An Error names the path and the reason: it
// cannot be opened (the system's reason, e.g. "No such file or directory"), it is a directory,
// or a read failed (with the byte offset).
std::string read_file(const std::string& path);

}  // namespace sparsetrain
