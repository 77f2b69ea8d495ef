// The few C library symbols gcc may emit calls to in freestanding code.
// rep movsb/stosb: a single emulated instruction each (docs/hosts.md).
#include <stddef.h>

extern "C" {

void* memcpy(void* dst, const void* src, size_t n) {
  void* d = dst;
  asm volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(n)::"memory");
  return dst;
}

void* memmove(void* dst, const void* src, size_t n) {
  unsigned char* d = static_cast<unsigned char*>(dst);
  const unsigned char* s = static_cast<const unsigned char*>(src);
  if (d <= s || d >= s + n) return memcpy(dst, src, n);
  while (n-- > 0) d[n] = s[n];
  return dst;
}

void* memset(void* dst, int c, size_t n) {
  void* d = dst;
  asm volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
  return dst;
}

int memcmp(const void* a, const void* b, size_t n) {
  const unsigned char* x = static_cast<const unsigned char*>(a);
  const unsigned char* y = static_cast<const unsigned char*>(b);
  for (size_t i = 0; i < n; ++i) {
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return 0;
}

}  // extern "C"
