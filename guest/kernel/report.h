// Result records for the VMM: `report` hypercalls of `key=value\n` lines.
#ifndef GUEST_KERNEL_REPORT_H_
#define GUEST_KERNEL_REPORT_H_

#include "lib/format.h"

namespace guest {

// The shared record buffer (MVMM_REPORT_MAX_BYTES). Only one record is
// built at a time; Send() issues it as one report hypercall and clears it.
TextBuf& ReportBuffer();
void SendReport();

}  // namespace guest

#endif  // GUEST_KERNEL_REPORT_H_
