// Kicking a vCPU thread out of KVM_RUN without installing a signal handler.
//
// The vCPU thread keeps kKickSignal blocked; KVM_SET_SIGNAL_MASK unblocks it
// only while the thread is inside KVM_RUN. A kick (pthread_kill) then makes
// KVM_RUN return EINTR, the signal stays pending (it is blocked again in user
// space) and DrainKickSignal() consumes it. No handler runs, so the library
// never touches the process's signal dispositions.
#ifndef MINIVMM_VMM_KVM_KICK_H_
#define MINIVMM_VMM_KVM_KICK_H_

#include <pthread.h>

#include "absl/status/status.h"

namespace minivmm {

int KickSignal();
// Blocks the kick signal in the calling thread and tells KVM to unblock it
// during KVM_RUN on `vcpu_fd`. Call on the vCPU thread before the first run.
absl::Status PrepareKickSignal(int vcpu_fd);
void SendKickSignal(pthread_t thread);
void DrainKickSignal();

}  // namespace minivmm

#endif  // MINIVMM_VMM_KVM_KICK_H_
