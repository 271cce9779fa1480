#include "sparsetrain/dist/mpi_communicator.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <string>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

namespace {

int thread_level = MPI_THREAD_SINGLE;
MPI_Op bf16_sum_op = MPI_OP_NULL;

void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  fail("MPI: {} failed: {}", what, std::string(text, static_cast<std::size_t>(length)));
}

extern "C" void add_bf16(void* in, void* inout, int* length, MPI_Datatype*) {
  const auto* a = static_cast<const Bf16*>(in);
  auto* b = static_cast<Bf16*>(inout);
  for (int i = 0; i < *length; ++i) b[i] = to_bf16(to_float(a[i]) + to_float(b[i]));
}

// MPI counts are ints: longer spans go in pieces.
template <typename T, typename Body>
void in_pieces(std::span<T> values, Body body) {
  constexpr std::size_t kPiece = std::size_t{1} << 30;
  for (std::size_t i = 0; i < values.size(); i += kPiece) {
    const std::size_t n = std::min(kPiece, values.size() - i);
    body(values.data() + i, static_cast<int>(n));
  }
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    if (comm_ != MPI_COMM_WORLD) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void sum(std::span<float> v) override { reduce(v, MPI_FLOAT, MPI_SUM); }
  void sum(std::span<double> v) override { reduce(v, MPI_DOUBLE, MPI_SUM); }
  void sum(std::span<Bf16> v) override { reduce(v, MPI_UINT16_T, bf16_sum_op); }
  void max(std::span<uint64_t> v) override { reduce(v, MPI_UINT64_T, MPI_MAX); }

  void broadcast(std::span<std::byte> bytes, int root) override {
    in_pieces(bytes, [&](std::byte* data, int n) { check(MPI_Bcast(data, n, MPI_BYTE, root, comm_), "MPI_Bcast"); });
  }
  std::vector<uint64_t> gather(uint64_t value, int root) override {
    std::vector<uint64_t> all(rank_ == root ? static_cast<std::size_t>(size_) : 0);
    check(MPI_Gather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, root, comm_), "MPI_Gather");
    return all;
  }
  void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }
  void abort(int exit_code) override { MPI_Abort(MPI_COMM_WORLD, exit_code); }

  std::unique_ptr<Communicator> duplicate() override {
    if (thread_level < MPI_THREAD_MULTIPLE) return nullptr;
    MPI_Comm copy = MPI_COMM_NULL;
    check(MPI_Comm_dup(comm_, &copy), "MPI_Comm_dup");
    return std::make_unique<MpiCommunicator>(copy);
  }

  std::string describe() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string text(version, static_cast<std::size_t>(length));
    text = text.substr(0, text.find_first_of(",\n"));
    return fmt::format("MPI ({}), {} ranks", text, size_);
  }

 private:
  template <typename T>
  void reduce(std::span<T> values, MPI_Datatype type, MPI_Op op) {
    in_pieces(values,
              [&](T* data, int n) { check(MPI_Allreduce(MPI_IN_PLACE, data, n, type, op, comm_), "MPI_Allreduce"); });
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> start_mpi(int& argc, char**& argv) {
  check(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &thread_level), "MPI_Init_thread");
  // Errors come back as codes (and become sparsetrain errors) instead of ending the job inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check(MPI_Op_create(add_bf16, /*commute=*/1, &bf16_sum_op), "MPI_Op_create");
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
}

void finish_mpi() {
  if (bf16_sum_op != MPI_OP_NULL) MPI_Op_free(&bf16_sum_op);
  MPI_Finalize();
}

}  // namespace sparsetrain
