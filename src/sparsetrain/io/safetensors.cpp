#include "sparsetrain/io/safetensors.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/json_text.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/core/utf8.h"
#include "sparsetrain/io/atomic_file.h"

namespace sparsetrain {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; tensors are copied as they lie in memory");

using json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr std::string_view kMetadataKey = "__metadata__";
constexpr std::string_view kLfsPointer = "version https://git-lfs";

struct Dtype {
  std::string_view name;
  uint64_t size;
};
constexpr Dtype kDtypes[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2},    {"I64", 8},
                             {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},      {"BOOL", 1},
                             {"U16", 2}, {"U32", 4}, {"U64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};

std::optional<uint64_t> dtype_size(std::string_view name) {
  for (const Dtype& d : kDtypes)
    if (d.name == name) return d.size;
  return std::nullopt;
}

std::string dtype_names() {
  std::string out;
  for (const Dtype& d : kDtypes) out += (out.empty() ? "" : ", ") + std::string(d.name);
  return out;
}

struct Entry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

Entry parse_entry(const std::string& file, const std::string& tensor, const json& value, uint64_t buffer_size) {
  const std::string where = fmt::format("{}: tensor '{}'", file, tensor);
  if (!value.is_object())
    fail("{}: the entry is a JSON {}, not an object of dtype, shape and data_offsets", where, value.type_name());
  for (const auto& [key, _] : value.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      fail("{}: unknown field '{}'; an entry has dtype, shape and data_offsets only", where, key);
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!value.contains(key)) fail("{}: missing '{}'", where, key);

  Entry e;
  e.name = tensor;
  const json& dtype = value["dtype"];
  if (!dtype.is_string()) fail("{}: dtype is a JSON {}, not a string", where, dtype.type_name());
  e.dtype = dtype.get<std::string>();
  const std::optional<uint64_t> element_size = dtype_size(e.dtype);
  if (!element_size) fail("{}: unknown dtype '{}'; expected one of {}", where, e.dtype, dtype_names());

  const json& shape = value["shape"];
  if (!shape.is_array()) fail("{}: shape is a JSON {}, not an array", where, shape.type_name());
  uint64_t elements = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const json& d = shape[i];
    if (d.is_number_integer() && !d.is_number_unsigned())
      fail("{}: shape[{}] is {}; dimensions cannot be negative", where, i, json_text(d));
    if (!d.is_number_unsigned()) fail("{}: shape[{}] is {}, not a non-negative integer", where, i, json_text(d));
    const auto n = d.get<uint64_t>();
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail("{}: shape[{}] is {}, above the largest dimension 2^63 - 1", where, i, n);
    if (__builtin_mul_overflow(elements, n, &elements))
      fail("{}: shape {} has more than 2^64 elements (the product overflows)", where, json_text(shape));
    e.shape.push_back(static_cast<int64_t>(n));
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements, *element_size, &bytes))
    fail("{}: shape {} of {} takes more than 2^64 bytes (the size overflows)", where, json_text(shape), e.dtype);

  const json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    fail("{}: data_offsets {} is not two non-negative integers [begin, end]", where, json_text(offsets));
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  if (e.begin > e.end) fail("{}: data_offsets [{}, {}] decrease; begin must not exceed end", where, e.begin, e.end);
  if (e.end - e.begin != bytes)
    fail("{}: data_offsets [{}, {}] span {} bytes, but shape {} of {} takes {} bytes", where, e.begin, e.end,
         e.end - e.begin, json_text(shape), e.dtype, bytes);
  if (e.end > buffer_size)
    fail("{}: data_offsets [{}, {}] run past the end of the {}-byte data buffer", where, e.begin, e.end, buffer_size);
  return e;
}

// Parses the header, rejecting duplicate keys (nlohmann keeps the last one silently) and
// recording the order of the top-level keys (nlohmann::json sorts them).
json parse_header(const std::string& file, std::string_view text, std::vector<std::string>& key_order) {
  std::vector<std::set<std::string>> open_objects;
  std::string entry;  // the top-level key whose value is being parsed
  const auto check = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      open_objects.pop_back();
    } else if (event == json::parse_event_t::key) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (depth == 1) entry = key;
      if (!open_objects.back().insert(key).second) {
        if (depth == 1 && key == kMetadataKey) fail("{}: '__metadata__' appears twice in the header", file);
        if (depth == 1) fail("{}: duplicate tensor name '{}' in the header", file, key);
        if (depth == 2 && entry == kMetadataKey) fail("{}: duplicate metadata key '{}'", file, key);
        if (depth == 2) fail("{}: tensor '{}': duplicate field '{}'", file, entry, key);
        fail("{}: duplicate key '{}' in the header", file, key);
      }
      if (depth == 1) key_order.push_back(key);
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const json::parse_error& e) {
    fail("{}: the header is not valid JSON: {} (at offset {})", file, json_parse_problem(e), 8 + e.byte - 1);
  } catch (const json::exception& e) {
    // A number beyond a double's range (1e400) is not a parse_error, and nlohmann knows no offset.
    fail("{}: the header is not valid JSON: {}", file, json_parse_problem(e));
  }
}

// `s` with bytes outside printable ASCII as \xNN, for naming text that is not valid UTF-8.
std::string escaped(std::string_view s) {
  std::string out;
  for (char c : s) {
    const auto b = static_cast<uint8_t>(c);
    out += b >= 0x20 && b < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", b);
  }
  return out;
}

}  // namespace

SafetensorsFile read_safetensors_bytes(std::span<const uint8_t> bytes, const std::string& name,
                                       const std::set<std::string>& left_out) {
  const uint64_t size = bytes.size();
  if (size == 0) fail("{}: empty file (0 bytes); a safetensors file starts with an 8-byte header length", name);
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (text.starts_with(kLfsPointer))
    fail("{}: this is a Git LFS pointer file, not the checkpoint; fetch the data with `git lfs pull`", name);
  if (size < 8)
    fail("{}: {} bytes is too short for a safetensors file; the header length alone takes 8 bytes", name, size);

  // Text at offset 0 (a YAML config, a log, JSON) read as a length is always absurd (at least
  // 0x0909090909090909); say what the file is instead of quoting that number.
  const std::string_view first8 = text.substr(0, 8);
  if (std::all_of(first8.begin(), first8.end(), [](char c) { return (c >= 0x20 && c < 0x7f) || (c >= 9 && c <= 13); }))
    fail(
        "{}: not a safetensors file: it starts with the text '{}' at offset 0, where a safetensors file has an "
        "8-byte little-endian header length",
        name, escaped(first8));
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | bytes[static_cast<size_t>(i)];
  if (header_size > kMaxHeaderBytes)
    fail("{}: header length {} at offset 0 is over the limit of {} bytes", name, header_size, kMaxHeaderBytes);
  if (header_size > size - 8)
    fail("{}: header length {} at offset 0 runs past the end of the file ({} bytes, so at most {} bytes of header)",
         name, header_size, size, size - 8);
  if (header_size == 0) fail("{}: header length 0 at offset 0; the header must be a JSON object", name);

  const std::string_view header = text.substr(8, header_size);
  if (const size_t bad = invalid_utf8_at(header); bad != std::string_view::npos)
    fail("{}: the header is not valid UTF-8 at offset {}", name, 8 + bad);
  std::vector<std::string> key_order;
  const json root = parse_header(name, header, key_order);
  if (!root.is_object()) fail("{}: the header is a JSON {}, not an object", name, root.type_name());

  const uint64_t data_start = 8 + header_size;
  const uint64_t buffer_size = size - data_start;
  SafetensorsFile result;
  std::vector<Entry> entries;
  for (const std::string& key : key_order) {
    const json& value = root.at(key);
    if (key != kMetadataKey) {
      entries.push_back(parse_entry(name, key, value, buffer_size));
      continue;
    }
    if (!value.is_object()) fail("{}: __metadata__ is a JSON {}, not an object of strings", name, value.type_name());
    for (const auto& [k, v] : value.items()) {
      if (!v.is_string()) fail("{}: __metadata__ value '{}' is a JSON {}, not a string", name, k, v.type_name());
      result.metadata.emplace(k, v.get<std::string>());
    }
  }

  // The tensors must tile the data buffer exactly: no gap, no overlap, nothing after the last.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.begin > covered)
      fail("{}: bytes [{}, {}) of the data buffer belong to no tensor (a gap before tensor '{}')", name, covered,
           e.begin, e.name);
    if (e.begin < covered)
      fail("{}: tensor '{}' at data_offsets [{}, {}] overlaps tensor '{}' at [{}, {}]", name, e.name, e.begin, e.end,
           previous->name, previous->begin, previous->end);
    covered = e.end;
    previous = &e;
  }
  if (covered != buffer_size)
    fail("{}: {} trailing byte{} at offset {} after the last tensor's data", name, buffer_size - covered,
         buffer_size - covered == 1 ? "" : "s", data_start + covered);

  std::erase_if(entries, [&](const Entry& e) { return left_out.contains(e.name); });
  for (const Entry& e : entries) {
    if (e.dtype == "F32" || e.dtype == "BOOL") continue;
    const bool other_float = e.dtype == "F16" || e.dtype == "BF16" || e.dtype == "F64";
    fail("{}: tensor '{}' has dtype {}; sparsetrain reads F32 values and BOOL masks only{}", name, e.name, e.dtype,
         other_float ? " (a Hugging Face model in another float type: save it as float32 first, with "
                       "model.float().save_pretrained(DIR))"
                     : "");
  }
  result.tensors.tensors.reserve(entries.size());
  for (const Entry& e : entries) {
    const uint8_t* data = bytes.data() + data_start + e.begin;
    const size_t n = static_cast<size_t>(e.end - e.begin);
    StateTensor t;
    t.name = e.name;
    t.shape = e.shape;
    if (e.dtype == "BOOL") {
      for (size_t i = 0; i < n; ++i)
        if (data[i] > 1)
          fail("{}: tensor '{}': BOOL byte {} at offset {} is not 0 or 1", name, e.name, data[i],
               data_start + e.begin + i);
      t.is_mask = true;
      t.keep.assign(data, data + n);
    } else {
      t.values.resize(n / sizeof(float));
      if (n > 0) std::memcpy(t.values.data(), data, n);
    }
    result.tensors.tensors.push_back(std::move(t));
  }
  return result;
}

SafetensorsFile read_safetensors(const std::string& path, const std::set<std::string>& left_out) {
  const std::string bytes = read_file(path);
  return read_safetensors_bytes({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, path, left_out);
}

void write_safetensors(const std::string& path, const StateDict& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Everything is checked before the file is touched, so a refused dict leaves no file behind.
  const auto check_utf8 = [&](const std::string& s, std::string_view what) {
    if (invalid_utf8_at(s) != std::string_view::npos) fail("{}: {} is not valid UTF-8", path, what);
  };
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (const auto& [key, value] : metadata) {
      check_utf8(key, fmt::format("metadata key '{}'", escaped(key)));
      check_utf8(value, fmt::format("the value of metadata key '{}'", escaped(key)));
      if (header.back() != '{') header += ',';
      header += json(key).dump() + ':' + json(value).dump();
    }
    header += "}";
  }
  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (const StateTensor& t : tensors.tensors) {
    check_utf8(t.name, fmt::format("tensor name '{}'", escaped(t.name)));
    if (t.name == kMetadataKey) fail("{}: '__metadata__' is reserved and cannot name a tensor", path);
    if (!names.insert(t.name).second) fail("{}: tensor '{}' appears twice in the state dict", path, t.name);
    uint64_t elements = 1;
    for (int64_t d : t.shape)
      if (d < 0 || __builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements))
        fail("{}: tensor '{}' has an invalid shape [{}]", path, t.name, fmt::join(t.shape, ", "));
    const size_t stored = t.is_mask ? t.keep.size() : t.values.size();
    if (elements != stored)
      fail("{}: tensor '{}' has shape [{}] ({} elements) but {} {}", path, t.name, fmt::join(t.shape, ", "), elements,
           stored, t.is_mask ? "mask bytes" : "values");
    if (t.is_mask)
      for (size_t i = 0; i < t.keep.size(); ++i)
        if (t.keep[i] > 1) fail("{}: mask '{}' holds {} at index {}, not 0 or 1", path, t.name, t.keep[i], i);
    const uint64_t size = stored * (t.is_mask ? 1 : sizeof(float));
    if (header.back() != '{') header += ',';
    header += json(t.name).dump();
    header += fmt::format(R"(:{{"dtype":"{}","shape":[{}],"data_offsets":[{},{}]}})", t.is_mask ? "BOOL" : "F32",
                          fmt::join(t.shape, ","), offset, offset + size);
    offset += size;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  uint8_t length[8];
  for (size_t i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));

  std::vector<ByteRange> pieces{{length, sizeof length}, {header.data(), header.size()}};
  for (const StateTensor& t : tensors.tensors)
    pieces.push_back(t.is_mask ? ByteRange{t.keep.data(), t.keep.size()}
                               : ByteRange{t.values.data(), t.values.size() * sizeof(float)});
  write_file_atomically(path, pieces);
}

}  // namespace sparsetrain
