/* pc_s3's addresses in low RAM, shared by its C and its resume code. */
#ifndef MINIVMM_TESTS_PC_GUESTS_S3_H_
#define MINIVMM_TESTS_PC_GUESTS_S3_H_

#define S3_RESUME_BASE 0x1000   /* the waking vector: real mode 0100:0000 */
#define S3_MARKER 0x600         /* 32 bits: 1 once the guest ran past its PM1 write */
#define S3_PM1_EVT_PORT 0x604   /* 16 bits: the FADT's PM1a_EVT_BLK, for the resume code */

#endif /* MINIVMM_TESTS_PC_GUESTS_S3_H_ */
