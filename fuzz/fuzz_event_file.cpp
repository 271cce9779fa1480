// TensorBoard event files, as a resumed run reads them: the input's first byte is the step the
// run resumes at, the rest one event file of a directory; cut_event_files cuts it before its
// first record of a later step, or one cut short, damaged or not an Event. What it keeps is a
// prefix of the file made of whole records whose CRCs check, and a second cut keeps all of it.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_common.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/io/event_file.h"
#include "sparsetrain/io/tfrecord.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0 || size > sparsetrain::fuzz::kMaxInputBytes) return -1;
  static const sparsetrain::fuzz::ScratchDir scratch;
  const int64_t resume_step = data[0];
  const std::string_view events = sparsetrain::fuzz::as_text(data + 1, size - 1);
  const std::string file = scratch.write("events.out.tfevents.0.fuzz.1.0", events);
  const std::string dir = scratch.path().string();
  try {
    sparsetrain::cut_event_files(dir, resume_step);
    const std::string kept = sparsetrain::read_file(file);
    FUZZ_CHECK(events.starts_with(kept));
    const sparsetrain::TfRecords records = sparsetrain::read_tfrecords(kept);
    FUZZ_CHECK(records.problem.empty() && records.end == kept.size());
    FUZZ_CHECK(sparsetrain::cut_event_files(dir, resume_step).empty());
    FUZZ_CHECK(sparsetrain::read_file(file) == kept);
  } catch (const sparsetrain::Error&) {
  }
  return 0;
}
