#include "kernel/pipe.h"

#include "kernel/mem.h"
#include "kernel/syscall_abi.h"

namespace guest {

struct Pipe {
  static constexpr size_t kSize = 512;
  SpinLock lock;
  uint8_t buf[kSize];
  size_t head;   // next byte to read
  size_t count;  // bytes buffered
  WaitQueue readers;
  WaitQueue writers;
  File read_end;
  File write_end;
};

void NewPipe(File** read_end, File** write_end) {
  static_assert(sizeof(Pipe) <= kPageSize);
  Pipe* p = static_cast<Pipe*>(AllocPages(1));
  p->read_end = {FileKind::kPipeRead, p};
  p->write_end = {FileKind::kPipeWrite, p};
  *read_end = &p->read_end;
  *write_end = &p->write_end;
}

int64_t PipeRead(Pipe* p, uint8_t* dst, size_t len) {
  if (len == 0) return 0;
  uint64_t flags = p->lock.LockIrqSave();
  // Writers are never closed in this kernel, so a reader waits for data.
  while (p->count == 0) SleepOn(&p->readers, &p->lock);
  size_t n = 0;
  while (n < len && p->count > 0) {
    dst[n++] = p->buf[p->head];
    p->head = (p->head + 1) % Pipe::kSize;
    --p->count;
  }
  WakeAll(&p->writers);
  p->lock.UnlockIrqRestore(flags);
  return static_cast<int64_t>(n);
}

int64_t PipeWrite(Pipe* p, const uint8_t* src, size_t len) {
  uint64_t flags = p->lock.LockIrqSave();
  size_t n = 0;
  while (n < len) {
    while (p->count == Pipe::kSize) SleepOn(&p->writers, &p->lock);
    while (n < len && p->count < Pipe::kSize) {
      p->buf[(p->head + p->count) % Pipe::kSize] = src[n++];
      ++p->count;
    }
    WakeAll(&p->readers);
  }
  p->lock.UnlockIrqRestore(flags);
  return static_cast<int64_t>(n);
}

int64_t InstallFd(Task* t, File* f) {
  for (int i = 0; i < kMaxFds; ++i) {
    if (t->fds[i] == nullptr) {
      t->fds[i] = f;
      return i;
    }
  }
  return -kEMfile;
}

}  // namespace guest
