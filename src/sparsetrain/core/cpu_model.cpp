#include "sparsetrain/core/cpu_model.h"

#include <fmt/format.h>

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace sparsetrain {

namespace {

std::string trimmed(const char* text) {
  std::string s(text);
  const auto begin = s.find_first_not_of(' ');
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(' ') - begin + 1);
}

CpuModel detect() {
  CpuModel cpu;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return cpu;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  cpu.vendor = vendor;
  if (__get_cpuid(1, &a, &b, &c, &d) != 0) {
    // The display family and model (Intel SDM and AMD APM, CPUID leaf 1): the extended fields
    // count only where the base family says so.
    const int base_family = static_cast<int>((a >> 8) & 0xf), base_model = static_cast<int>((a >> 4) & 0xf);
    cpu.family = base_family == 0xf ? base_family + static_cast<int>((a >> 20) & 0xff) : base_family;
    cpu.model =
        base_family == 0x6 || base_family == 0xf ? base_model + (static_cast<int>((a >> 16) & 0xf) << 4) : base_model;
    cpu.stepping = static_cast<int>(a & 0xf);
  }
  if (__get_cpuid(0x80000000, &a, &b, &c, &d) != 0 && a >= 0x80000004) {
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      __get_cpuid(0x80000002 + leaf, &a, &b, &c, &d);
      std::memcpy(brand + 16 * leaf, &a, 4);
      std::memcpy(brand + 16 * leaf + 4, &b, 4);
      std::memcpy(brand + 16 * leaf + 8, &c, 4);
      std::memcpy(brand + 16 * leaf + 12, &d, 4);
    }
    cpu.name = trimmed(brand);
  }
#endif
  return cpu;
}

}  // namespace

const CpuModel& cpu_model() {
  static const CpuModel cpu = detect();
  return cpu;
}

std::string describe(const CpuModel& cpu) {
  if (cpu.vendor.empty()) return "unknown CPU";
  return fmt::format("{} ({} family {} model {} stepping {})", cpu.name.empty() ? "unnamed" : cpu.name, cpu.vendor,
                     cpu.family, cpu.model, cpu.stepping);
}

}  // namespace sparsetrain
