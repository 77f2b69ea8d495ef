/* The two libtracefs calls the tracer makes, in C: tracefs.h does not
   compile as C++ (enum arguments with int defaults). */
#include "vmm/ktrace/tracefs_shim.h"

#include <tracefs/tracefs.h>

const char* minivmm_tracing_dir(void) { return tracefs_tracing_dir(); }

struct tep_handle* minivmm_kvm_event_formats(void) {
  const char* systems[] = {"kvm", NULL};
  return tracefs_local_events_system(NULL, systems);
}
