// A forward reader over a libFuzzer input: little-endian integers and byte
// runs taken from the front, zeros once the input is used up. Chosen over
// FuzzedDataProvider (which reads integers from the back) so that the seed
// generator (tools/make_seeds.py) can write structured inputs in plain order.
#ifndef MINIVMM_FUZZ_COMMON_INPUT_H_
#define MINIVMM_FUZZ_COMMON_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

namespace minivmm::fuzz {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool empty() const { return pos_ >= size_; }
  size_t remaining() const { return size_ - pos_; }

  uint8_t U8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t U16() { return static_cast<uint16_t>(Le(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Le(4)); }
  uint64_t U64() { return Le(8); }

  // Up to `n` bytes (fewer at the end of the input).
  std::span<const uint8_t> Bytes(size_t n) {
    if (n > remaining()) n = remaining();
    std::span<const uint8_t> out(data_ + pos_, n);
    pos_ += n;
    return out;
  }

 private:
  uint64_t Le(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t{U8()} << (8 * i);
    return v;
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// An invariant of the code under test was broken: report and abort so that
// libFuzzer records the input as a crash.
[[noreturn]] inline void Fail(const char* file, int line, const char* what) {
  std::fprintf(stderr, "FUZZ INVARIANT BROKEN at %s:%d: %s\n", file, line, what);
  std::abort();
}

}  // namespace minivmm::fuzz

#define FUZZ_CHECK(cond)                                           \
  do {                                                             \
    if (!(cond)) ::minivmm::fuzz::Fail(__FILE__, __LINE__, #cond); \
  } while (0)

#endif  // MINIVMM_FUZZ_COMMON_INPUT_H_
