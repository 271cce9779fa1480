#pragma once
// FormatSpec: which compressed format a sparse weight uses. Text forms (configs, CLI, bench):
//   csr            unstructured (a 1x1 block)
//   bcsr4, bcsr8, bcsr16   square blocks
//   N:M            e.g. 2:4, 1:4, 2:8: exactly N kept in every M consecutive inputs
#include <string>
#include <string_view>

namespace sparsetrain {

enum class FormatKind { BlockSparse, NM };

struct FormatSpec {
  FormatKind kind = FormatKind::BlockSparse;
  int block = 1;  // BlockSparse: 1, 4, 8 or 16
  int n = 2;      // NM
  int m = 4;      // NM

  static FormatSpec csr() { return {}; }
  static FormatSpec bcsr(int block) { return {FormatKind::BlockSparse, block, 2, 4}; }
  static FormatSpec nm(int n, int m) { return {FormatKind::NM, 1, n, m}; }
  // The names parse takes, as its errors list them.
  static constexpr const char* kNames = "csr, bcsr4, bcsr8, bcsr16 or N:M such as 2:4";
  // Throws Error naming `source` and the `accepted` forms (a config also takes auto and
  // masked-dense, which are not formats).
  static FormatSpec parse(std::string_view text, std::string_view source, std::string_view accepted = kNames);
  std::string name() const;
  // The sparsity this format implies (N:M), or a negative value when any sparsity is possible.
  double implied_sparsity() const { return kind == FormatKind::NM ? 1.0 - static_cast<double>(n) / m : -1.0; }
  bool operator==(const FormatSpec&) const = default;
};

}  // namespace sparsetrain
