/* libtracefs for kvm_exit_trace.cc (see tracefs_shim.c). */
#ifndef MINIVMM_VMM_KTRACE_TRACEFS_SHIM_H_
#define MINIVMM_VMM_KTRACE_TRACEFS_SHIM_H_

#ifdef __cplusplus
extern "C" {
#endif

struct tep_handle;

/* tracefs's mount point, or NULL where tracefs is not mounted. */
const char* minivmm_tracing_dir(void);
/* The formats of every kvm:* event, or NULL (errno says why). */
struct tep_handle* minivmm_kvm_event_formats(void);

#ifdef __cplusplus
}
#endif

#endif
