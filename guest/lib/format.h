// Tiny string view and bounded text buffer. Pure: compiles freestanding (the
// guest kernel) and hosted (tests/guest), and never allocates.
#ifndef GUEST_LIB_FORMAT_H_
#define GUEST_LIB_FORMAT_H_

#include <stddef.h>
#include <stdint.h>

namespace guest {

size_t StrLen(const char* s);

// A non-owning view of characters; not NUL-terminated.
class StrView {
 public:
  constexpr StrView() : data_(nullptr), size_(0) {}
  constexpr StrView(const char* data, size_t size) : data_(data), size_(size) {}
  StrView(const char* cstr) : data_(cstr), size_(cstr ? StrLen(cstr) : 0) {}  // NOLINT

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  char operator[](size_t i) const { return data_[i]; }

  bool operator==(StrView o) const;
  bool operator!=(StrView o) const { return !(*this == o); }
  // Index of the first `c`, or size() when absent.
  size_t Find(char c) const;
  StrView Sub(size_t pos, size_t len = ~size_t{0}) const;
  // Parses a decimal unsigned integer that fits in 64 bits; no sign, no spaces.
  bool ToU64(uint64_t* out) const;

 private:
  const char* data_;
  size_t size_;
};

// Appends text into caller-owned storage. Output past the capacity is dropped
// and remembered (overflowed()), so callers can fail loudly instead of
// reporting a truncated record.
class TextBuf {
 public:
  constexpr TextBuf(char* storage, size_t capacity)
      : buf_(storage), cap_(capacity), len_(0), overflow_(false) {}

  TextBuf& Str(StrView s);
  TextBuf& Char(char c);
  TextBuf& Dec(uint64_t v);
  TextBuf& SDec(int64_t v);
  // Lower-case hex without prefix, at least `min_digits` digits.
  TextBuf& Hex(uint64_t v, int min_digits = 1);
  // Appends "key=value\n" (one report line).
  TextBuf& Kv(StrView key, uint64_t value);
  TextBuf& Kv(StrView key, StrView value);
  // The same with a two-part key "prefix.key".
  TextBuf& Kv(StrView prefix, StrView key, uint64_t value);

  const char* data() const { return buf_; }
  size_t size() const { return len_; }
  bool overflowed() const { return overflow_; }
  TextBuf& Clear() {
    len_ = 0;
    overflow_ = false;
    return *this;
  }
  StrView View() const { return StrView(buf_, len_); }

 private:
  char* buf_;
  size_t cap_;
  size_t len_;
  bool overflow_;
};

}  // namespace guest

#endif  // GUEST_LIB_FORMAT_H_
