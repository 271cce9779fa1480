// Text corpora: the input is both a plain text file for load_text_file (then split by
// split_text, as training does) and the tagged file ca01 of a one-document Brown corpus for
// load_brown_corpus (cats.txt lists "ca01 news").
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_common.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/utf8.h"
#include "sparsetrain/data/text_corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > sparsetrain::fuzz::kMaxInputBytes) return -1;
  static const sparsetrain::fuzz::ScratchDir scratch;
  static const std::string brown_dir = [] {
    scratch.write("cats.txt", "ca01 news\n");
    return scratch.path().string();
  }();
  const std::string_view input = sparsetrain::fuzz::as_text(data, size);

  try {
    const sparsetrain::TextDocument document = sparsetrain::load_text_file(scratch.write("text.txt", input));
    FUZZ_CHECK(document.text == input);
    const sparsetrain::TextSplit split = sparsetrain::split_text(document, 0.1);
    FUZZ_CHECK(split.train.size() == 1 && split.validation.size() == 1);
    FUZZ_CHECK(split.train[0].text + split.validation[0].text == input);
  } catch (const sparsetrain::Error&) {
  }

  try {
    scratch.write("ca01", input);
    const std::vector<sparsetrain::TextDocument> documents = sparsetrain::load_brown_corpus(brown_dir);
    FUZZ_CHECK(documents.size() == 1 && documents[0].name == "ca01" && documents[0].category == "news");
    // Plain text is rebuilt from pieces of valid UTF-8 cut at ASCII bytes, so it is valid UTF-8.
    FUZZ_CHECK(sparsetrain::invalid_utf8_at(documents[0].text) == std::string_view::npos);
  } catch (const sparsetrain::Error&) {
  }
  return 0;
}
