// Checks on addresses that come from user tasks (system-call arguments).
#ifndef GUEST_KERNEL_USER_MEM_H_
#define GUEST_KERNEL_USER_MEM_H_

#include <stdint.h>

namespace guest {

// True when [addr, addr+len) lies inside user-accessible memory (the
// kernel image's .user_* pages or the user arena) without wrapping.
bool UserRangeOk(uint64_t addr, uint64_t len);

}  // namespace guest

#endif  // GUEST_KERNEL_USER_MEM_H_
