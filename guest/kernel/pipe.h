// Pipes and the per-task file table.
#ifndef GUEST_KERNEL_PIPE_H_
#define GUEST_KERNEL_PIPE_H_

#include <stddef.h>
#include <stdint.h>

#include "kernel/sched.h"

namespace guest {

struct Pipe;

enum class FileKind : uint8_t { kPipeRead, kPipeWrite };

struct File {
  FileKind kind;
  Pipe* pipe;
};

// A pipe with both ends as Files. Never freed (workloads are bounded).
void NewPipe(File** read_end, File** write_end);

// Blocking read: waits while empty and a writer exists; returns bytes read
// (>= 1) or 0 at end of file. `dst` is kernel-checked memory.
int64_t PipeRead(Pipe* p, uint8_t* dst, size_t len);
// Blocking write of all `len` bytes; returns len.
int64_t PipeWrite(Pipe* p, const uint8_t* src, size_t len);

// Installs `f` in the first free slot of `t`; returns the fd or -EMFILE.
int64_t InstallFd(Task* t, File* f);

}  // namespace guest

#endif  // GUEST_KERNEL_PIPE_H_
