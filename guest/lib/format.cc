#include "lib/format.h"

namespace guest {

size_t StrLen(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

bool StrView::operator==(StrView o) const {
  if (size_ != o.size_) return false;
  for (size_t i = 0; i < size_; ++i) {
    if (data_[i] != o.data_[i]) return false;
  }
  return true;
}

size_t StrView::Find(char c) const {
  for (size_t i = 0; i < size_; ++i) {
    if (data_[i] == c) return i;
  }
  return size_;
}

StrView StrView::Sub(size_t pos, size_t len) const {
  if (pos > size_) pos = size_;
  if (len > size_ - pos) len = size_ - pos;
  return StrView(data_ + pos, len);
}

bool StrView::ToU64(uint64_t* out) const {
  if (size_ == 0 || size_ > 20) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < size_; ++i) {
    char c = data_[i];
    if (c < '0' || c > '9') return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (~uint64_t{0} - digit) / 10) return false;  // would overflow
    v = v * 10 + digit;
  }
  *out = v;
  return true;
}

TextBuf& TextBuf::Char(char c) {
  if (len_ < cap_) {
    buf_[len_++] = c;
  } else {
    overflow_ = true;
  }
  return *this;
}

TextBuf& TextBuf::Str(StrView s) {
  for (size_t i = 0; i < s.size(); ++i) Char(s[i]);
  return *this;
}

TextBuf& TextBuf::Dec(uint64_t v) {
  char tmp[20];
  int n = 0;
  do {
    tmp[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) Char(tmp[--n]);
  return *this;
}

TextBuf& TextBuf::SDec(int64_t v) {
  if (v < 0) {
    Char('-');
    // Negate in unsigned arithmetic so INT64_MIN does not overflow.
    return Dec(~static_cast<uint64_t>(v) + 1);
  }
  return Dec(static_cast<uint64_t>(v));
}

TextBuf& TextBuf::Hex(uint64_t v, int min_digits) {
  char tmp[16];
  int n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[v & 0xf];
    v >>= 4;
  } while (v != 0);
  while (n < min_digits && n < 16) tmp[n++] = '0';
  while (n > 0) Char(tmp[--n]);
  return *this;
}

TextBuf& TextBuf::Kv(StrView key, uint64_t value) {
  return Str(key).Char('=').Dec(value).Char('\n');
}

TextBuf& TextBuf::Kv(StrView key, StrView value) {
  return Str(key).Char('=').Str(value).Char('\n');
}

TextBuf& TextBuf::Kv(StrView prefix, StrView key, uint64_t value) {
  return Str(prefix).Char('.').Str(key).Char('=').Dec(value).Char('\n');
}

}  // namespace guest
