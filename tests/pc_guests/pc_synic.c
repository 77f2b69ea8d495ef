/* Hyper-V's SynIC driven from outside through QEMU's hyperv-testdev (port
   0x3000), on one vCPU (vp_index 0):
   - SINT routes: four SINTs (0-3, vectors 0xB0-0xB3; 1 and 3 auto-EOI, 0
     and 2 EOIed by their handlers) each raised by the device's SET_SINT a
     known number of times (SINT k: k + 1), each raise answered by exactly
     one interrupt;
   - a probe: HvSignalEvent to a connection nobody created;
   - a message connection (SINT 8, vector 0xB8, auto-EOI, connection 0x10):
     HvPostMessage into the empty slot (delivered, one interrupt), into the
     busy slot (accepted and staged, msg_pending set, no interrupt), a third
     while one is staged (HV_STATUS_INSUFFICIENT_BUFFERS), then the slot
     cleared and EOM written: the staged message is delivered (a second
     interrupt); HvPostMessage to an unknown connection;
   - an event connection (SINT 9, vector 0xB9, auto-EOI, connection 0x20):
     HvSignalEvent sets the connection's flag in the SIEFP slot and raises
     the SINT only when the flag was clear; to an unknown connection.
   Under QEMU (-cpu host,hv_passthrough -device hyperv-testdev) two answers
   are QEMU's own rather than Hyper-V's:
   - a staged message is re-posted from the connection's copy of the last
     message it was handed, so the one the third (refused) post carried is
     the one delivered after EOM: msg_redelivered_payload is the third's;
   - HvSignalEvent to an unknown connection: KVM finds no eventfd and hands
     the call to QEMU, whose own table is empty: HV_STATUS_INVALID_CONNECTION_ID
     (0x12), not KVM's HV_STATUS_INVALID_PORT_ID (0x11).
   Connections answer asynchronously (QEMU's main loop sets event flags,
   re-posts a staged message after EOM and only then frees its staging area
   for the next post, even after a delivery into an empty slot), so every
   outcome is waited for, bounded by the TSC, a post follows a delivered one
   only after a settling delay, and every absence of an interrupt is
   checked after one too. It prints what it saw as key=value lines,
   then the exact numbers of SynIC control writes (the enables and the
   disables: each a hyperv exit), hypercalls and test-device writes. A wrong
   outcome FAILs at the end, after every line; a missing device or SynIC
   fails within a few bounded waits instead of hanging. */
#include "pc_guest.h"

#define HV_CPUID_VENDOR 0x40000000u
#define HV_CPUID_FEATURES 0x40000003u
#define HV_FEATURE_SYNIC (1u << 2)
#define HV_FEATURE_HYPERCALL (1u << 5)
#define HV_FEATURE_VP_INDEX (1u << 6)

#define HV_MSR_GUEST_OS_ID 0x40000000u
#define HV_MSR_HYPERCALL 0x40000001u
#define HV_MSR_VP_INDEX 0x40000002u
#define HV_MSR_SCONTROL 0x40000080u
#define HV_MSR_SIEFP 0x40000082u
#define HV_MSR_SIMP 0x40000083u
#define HV_MSR_EOM 0x40000084u
#define HV_MSR_SINT0 0x40000090u
#define HV_ENABLE 1u /* SCONTROL, SIMP, SIEFP, HYPERCALL */
#define HV_SINT_MASKED (1u << 16)
#define HV_SINT_AUTO_EOI (1u << 17)
#define HV_GUEST_OS_ID (0x8f00ull << 48) /* kvm-unit-tests' */

#define HVCALL_POST_MESSAGE 0x5cu
#define HVCALL_SIGNAL_EVENT 0x5du
#define HVCALL_FAST (1u << 16)
#define HV_STATUS_SUCCESS 0x0u
#define HV_STATUS_INVALID_PORT_ID 0x11u
#define HV_STATUS_INVALID_CONNECTION_ID 0x12u
#define HV_STATUS_INSUFFICIENT_BUFFERS 0x13u
#define HV_MSG_FLAG_PENDING 1u

#define TESTDEV_PORT 0x3000
#define TD_SINT_ROUTE_CREATE 1u
#define TD_SINT_ROUTE_DESTROY 2u
#define TD_SINT_ROUTE_SET_SINT 3u
#define TD_MSG_CONN_CREATE 4u
#define TD_MSG_CONN_DESTROY 5u
#define TD_EVT_CONN_CREATE 6u
#define TD_EVT_CONN_DESTROY 7u

#define SPURIOUS_VECTOR 0xff

#define VP_INDEX 0u
#define SINT_VECTOR_BASE 0xB0u /* SINT n: vector 0xB0 + n */
#define ROUTE_SINTS 4u         /* SINTs 0..3; odd ones auto-EOI */
#define MSG_SINT 8u
#define EVT_SINT 9u
#define MSG_CONN 0x10u
#define EVT_CONN 0x20u
#define UNKNOWN_MSG_CONN 0x77u
#define UNKNOWN_EVT_CONN 0x21u
#define PROBE_CONN 0x1234u
#define MSG_TYPE 0x12345678u
#define MSG_PAYLOAD1 0x0123456789abcdefull
#define MSG_PAYLOAD2 0xfedcba9876543210ull
#define MSG_PAYLOAD3 0x5555aaaa3333ccccull

/* Bounded waits, in TSC ticks: seconds on any host, even a nested KVM
   (pc_smp's). SETTLE_TSC: how long an interrupt that should not come is
   given to come, and QEMU's main loop to finish a delivery. */
#define WAIT_TSC (1ull << 34)
#define SETTLE_TSC (1ull << 28)

/* The SIMP's slots and HvPostMessage's input: 256 bytes each. */
struct hv_message {
  uint32_t message_type;
  uint8_t payload_size, message_flags;
  uint16_t reserved;
  uint64_t origination_id;
  uint64_t payload[30];
};
struct hv_post_message_input {
  uint32_t connection_id, reserved, message_type, payload_size;
  uint64_t payload[30];
};
_Static_assert(sizeof(struct hv_message) == 256, "a SIMP slot is 256 bytes");
_Static_assert(sizeof(struct hv_post_message_input) == 256, "HvPostMessage's input is 256 bytes");

static uint8_t hypercall_page[4096] __attribute__((aligned(4096)));
static struct hv_message simp[16] __attribute__((aligned(4096)));
static uint32_t siefp[16][64] __attribute__((aligned(4096))); /* 2048 flags per SINT */
static struct hv_post_message_input post_input __attribute__((aligned(256)));
static uint32_t hypercall_entry; /* the hypercall page's address, for call * */

static volatile uint32_t interrupts[16]; /* per SINT */
static uint8_t sint_auto_eoi[16];
static uint32_t synic_control_writes, hypercalls, testdev_writes;
static int timed_out; /* after one bounded wait ran out, waits only look */
static const char* first_failure;

void isr_sint0(void), isr_sint1(void), isr_sint2(void), isr_sint3(void), isr_sint8(void),
    isr_sint9(void);
void isr_spurious(void), isr_other(void);

/* Each SINT's vector counts into interrupts[sint]; a non-auto-EOI one EOIs
   its local APIC, an auto-EOI one must not. */
void sint_handler(uint32_t sint) {
  ++interrupts[sint];
  if (!sint_auto_eoi[sint]) wrmsr(MSR_X2APIC_EOI, 0);
}

void other_handler(void) { guest_fail("unexpected interrupt or exception"); }

#define SINT_STUB(n)                                                      \
  ".globl isr_sint" #n "\nisr_sint" #n ":\n  pushal\n  cld\n  pushl $" #n \
  "\n  call sint_handler\n  addl $4, %esp\n  popal\n  iret\n"
__asm__(SINT_STUB(0) SINT_STUB(1) SINT_STUB(2) SINT_STUB(3) SINT_STUB(8) SINT_STUB(
    9) ".globl isr_spurious, isr_other\n"
       "isr_spurious:\n  iret\n"
       "isr_other:\n  cld\n  call other_handler\n");

static void expect(int ok, const char* what) {
  if (!ok && first_failure == 0) first_failure = what;
}

static void idt_init(void) {
  for (uint32_t v = 0; v < 256; ++v) idt_set_gate(v, isr_other);
  idt_set_gate(SINT_VECTOR_BASE + 0, isr_sint0);
  idt_set_gate(SINT_VECTOR_BASE + 1, isr_sint1);
  idt_set_gate(SINT_VECTOR_BASE + 2, isr_sint2);
  idt_set_gate(SINT_VECTOR_BASE + 3, isr_sint3);
  idt_set_gate(SINT_VECTOR_BASE + MSG_SINT, isr_sint8);
  idt_set_gate(SINT_VECTOR_BASE + EVT_SINT, isr_sint9);
  idt_set_gate(SPURIOUS_VECTOR, isr_spurious);
  idt_load();
}

static void delay_tsc(uint64_t ticks) {
  uint64_t end = rdtsc() + ticks;
  while (rdtsc() < end) cpu_relax();
}

/* Waits until (*word & mask) == want; 0 when WAIT_TSC ran out (and from
   then on every wait only looks once). */
static int wait_bits(volatile uint32_t* word, uint32_t mask, uint32_t want) {
  uint64_t end = rdtsc() + (timed_out ? 0 : WAIT_TSC);
  while ((*word & mask) != want) {
    if (rdtsc() > end) {
      timed_out = 1;
      return 0;
    }
    cpu_relax();
  }
  return 1;
}

/* Waits until SINT `sint` has had `n` interrupts (or more: then 0 at once). */
static int wait_interrupts(uint32_t sint, uint32_t n) {
  uint64_t end = rdtsc() + (timed_out ? 0 : WAIT_TSC);
  while (interrupts[sint] < n) {
    if (rdtsc() > end) {
      timed_out = 1;
      return 0;
    }
    cpu_relax();
  }
  return interrupts[sint] == n;
}

static void synic_write(uint32_t msr, uint64_t value) {
  wrmsr(msr, value);
  ++synic_control_writes;
}

static void sint_set(uint32_t sint, int auto_eoi) {
  sint_auto_eoi[sint] = (uint8_t)auto_eoi;
  wrmsr(HV_MSR_SINT0 + sint, (SINT_VECTOR_BASE + sint) | (auto_eoi ? HV_SINT_AUTO_EOI : 0));
}

static void sint_mask(uint32_t sint) {
  wrmsr(HV_MSR_SINT0 + sint, HV_SINT_MASKED | (SINT_VECTOR_BASE + sint));
}

static void testdev(uint32_t ctl, uint32_t sint, uint32_t conn_id) {
  outl(TESTDEV_PORT, (conn_id << 24) | (ctl << 16) | (VP_INDEX << 8) | sint);
  ++testdev_writes;
}

/* A hypercall through the hypercall page, 32-bit convention: EDX:EAX
   control, EBX:ECX input, EDI:ESI output (none); the status is the low 16
   bits of the result in EDX:EAX. */
static uint32_t hypercall(uint32_t control, uint64_t input) {
  uint32_t lo = control, hi = 0;
  __asm__ volatile("call *%[entry]"
                   : "+a"(lo), "+d"(hi)
                   : "b"((uint32_t)(input >> 32)), "c"((uint32_t)input), "D"(0u),
                     "S"(0u), [entry] "m"(hypercall_entry)
                   : "memory", "cc");
  ++hypercalls;
  return lo & 0xffffu;
}

static uint32_t post_message(uint32_t conn_id, uint64_t payload) {
  post_input.connection_id = conn_id;
  post_input.message_type = MSG_TYPE;
  post_input.payload_size = 8;
  post_input.payload[0] = payload;
  return hypercall(HVCALL_POST_MESSAGE, (uint32_t)&post_input);
}

static uint32_t signal_event(uint32_t conn_id) {
  return hypercall(HVCALL_SIGNAL_EVENT | HVCALL_FAST, conn_id);
}

static void kv_status(const char* key, uint32_t status, uint32_t want) {
  kv_hex(key, status);
  expect(status == want, "a hypercall's status is not the expected one");
}

static void kv_interrupts(const char* key, uint32_t sint, uint32_t want, const char* what) {
  kv_dec(key, interrupts[sint]);
  expect(interrupts[sint] == want, what);
}

static void check_leaves(void) {
  uint32_t r[4];
  cpuid(HV_CPUID_VENDOR, 0, r);
  if (r[0] < HV_CPUID_FEATURES) guest_fail("no Hyper-V leaves");
  cpuid(HV_CPUID_FEATURES, 0, r);
  kv_dec("synic_available", (r[0] & HV_FEATURE_SYNIC) != 0);
  kv_dec("hypercall_available", (r[0] & HV_FEATURE_HYPERCALL) != 0);
  kv_dec("vp_index_available", (r[0] & HV_FEATURE_VP_INDEX) != 0);
  if (!(r[0] & HV_FEATURE_SYNIC) || !(r[0] & HV_FEATURE_HYPERCALL) || !(r[0] & HV_FEATURE_VP_INDEX))
    guest_fail("Hyper-V leaves without SynIC, the hypercall MSRs or the VP index");
  uint64_t vp = rdmsr(HV_MSR_VP_INDEX);
  kv_dec("vp_index", vp);
  if (vp != VP_INDEX) guest_fail("this vCPU's VP index is not 0");
}

static void synic_enable(void) {
  synic_write(HV_MSR_SIMP, (uint32_t)simp | HV_ENABLE);
  synic_write(HV_MSR_SIEFP, (uint32_t)siefp | HV_ENABLE);
  synic_write(HV_MSR_SCONTROL, HV_ENABLE);
  kv_hex("scontrol", rdmsr(HV_MSR_SCONTROL));
}

static void synic_disable(void) {
  synic_write(HV_MSR_SCONTROL, 0);
  synic_write(HV_MSR_SIEFP, 0);
  synic_write(HV_MSR_SIMP, 0);
}

/* SINT k raised k + 1 times, each raise waited for. */
static void test_sint_routes(void) {
  for (uint32_t k = 0; k < ROUTE_SINTS; ++k) {
    sint_set(k, k & 1);
    testdev(TD_SINT_ROUTE_CREATE, k, 0);
  }
  for (uint32_t k = 0; k < ROUTE_SINTS; ++k) {
    for (uint32_t i = 0; i < k + 1; ++i) {
      testdev(TD_SINT_ROUTE_SET_SINT, k, 0);
      wait_interrupts(k, i + 1);
    }
  }
  delay_tsc(SETTLE_TSC);
  for (uint32_t k = 0; k < ROUTE_SINTS; ++k) {
    put_str("sint");
    put_dec(k);
    kv_interrupts("_interrupts", k, k + 1, "a SINT route's raises and its interrupts differ");
  }
  for (uint32_t k = 0; k < ROUTE_SINTS; ++k) {
    testdev(TD_SINT_ROUTE_DESTROY, k, 0);
    sint_mask(k);
  }
}

static void setup_hypercall_page(void) {
  wrmsr(HV_MSR_GUEST_OS_ID, HV_GUEST_OS_ID);
  wrmsr(HV_MSR_HYPERCALL, (uint32_t)hypercall_page | HV_ENABLE);
  hypercall_entry = (uint32_t)hypercall_page;
  kv_dec("hypercall_page_filled", hypercall_page[0] != 0);
  if (hypercall_page[0] == 0) guest_fail("the hypercall page was not filled");
}

static void kv_slot(const char* prefix, volatile struct hv_message* slot) {
  put_str(prefix);
  kv_hex("_type", slot->message_type);
  put_str(prefix);
  kv_dec("_size", slot->payload_size);
  put_str(prefix);
  kv_hex("_payload", slot->payload[0]);
  put_str(prefix);
  kv_dec("_pending", slot->message_flags & HV_MSG_FLAG_PENDING);
}

static int slot_holds(volatile struct hv_message* slot, uint64_t payload) {
  return slot->message_type == MSG_TYPE && slot->payload_size == 8 && slot->payload[0] == payload;
}

static void test_message_connection(void) {
  volatile struct hv_message* slot = &simp[MSG_SINT];
  volatile uint32_t* slot_word0 = (volatile uint32_t*)slot;
  volatile uint32_t* slot_word1 = slot_word0 + 1; /* payload_size, message_flags */
  sint_set(MSG_SINT, 1);
  testdev(TD_MSG_CONN_CREATE, MSG_SINT, MSG_CONN);

  /* 1: the empty slot. */
  kv_status("msg1_status", post_message(MSG_CONN, MSG_PAYLOAD1), HV_STATUS_SUCCESS);
  wait_bits(slot_word0, ~0u, MSG_TYPE);
  wait_interrupts(MSG_SINT, 1);
  delay_tsc(SETTLE_TSC); /* QEMU frees its staging area in its main loop */
  kv_slot("msg1", slot);
  expect(slot_holds(slot, MSG_PAYLOAD1) && !(slot->message_flags & HV_MSG_FLAG_PENDING),
         "the first message is not in its slot as posted");
  kv_interrupts("msg1_interrupts", MSG_SINT, 1, "the first message did not raise its SINT once");

  /* 2: the busy slot: staged, msg_pending set, the slot unchanged. */
  kv_status("msg2_status", post_message(MSG_CONN, MSG_PAYLOAD2), HV_STATUS_SUCCESS);
  wait_bits(slot_word1, HV_MSG_FLAG_PENDING << 8, HV_MSG_FLAG_PENDING << 8);
  delay_tsc(SETTLE_TSC);
  kv_slot("msg2", slot);
  expect(slot_holds(slot, MSG_PAYLOAD1) && (slot->message_flags & HV_MSG_FLAG_PENDING),
         "a message to a busy slot did not leave it as it was with msg_pending set");
  kv_interrupts("msg2_interrupts", MSG_SINT, 1, "a message to a busy slot raised its SINT");

  /* 3: one message is staged already. */
  kv_status("msg3_status", post_message(MSG_CONN, MSG_PAYLOAD3), HV_STATUS_INSUFFICIENT_BUFFERS);

  /* The slot consumed, EOM: the staged message comes (QEMU's: the third's
     content, see the header). */
  slot->message_type = 0;
  __asm__ volatile("" ::: "memory");
  wrmsr(HV_MSR_EOM, 0);
  int arrived = wait_bits(slot_word0, ~0u, MSG_TYPE);
  wait_interrupts(MSG_SINT, 2);
  delay_tsc(SETTLE_TSC);
  kv_dec("msg_redelivered", arrived);
  kv_slot("msg_redelivered", slot);
  expect(arrived && slot_holds(slot, MSG_PAYLOAD3) && !(slot->message_flags & HV_MSG_FLAG_PENDING),
         "the staged message was not delivered after EOM");
  kv_interrupts("msg_interrupts", MSG_SINT, 2, "the staged message did not raise its SINT once");
  slot->message_type = 0;

  kv_status("msg_unknown_conn_status", post_message(UNKNOWN_MSG_CONN, MSG_PAYLOAD1),
            HV_STATUS_INVALID_CONNECTION_ID);
  testdev(TD_MSG_CONN_DESTROY, 0, MSG_CONN);
  sint_mask(MSG_SINT);
}

static void test_event_connection(void) {
  volatile uint32_t* flags = &siefp[EVT_SINT][EVT_CONN / 32];
  const uint32_t bit = 1u << (EVT_CONN % 32);
  sint_set(EVT_SINT, 1);
  testdev(TD_EVT_CONN_CREATE, EVT_SINT, EVT_CONN);

  /* 1: the flag clear: set, one interrupt. */
  kv_status("evt1_status", signal_event(EVT_CONN), HV_STATUS_SUCCESS);
  wait_bits(flags, bit, bit);
  wait_interrupts(EVT_SINT, 1);
  delay_tsc(SETTLE_TSC);
  kv_dec("evt1_flag", (*flags & bit) != 0);
  kv_interrupts("evt1_interrupts", EVT_SINT, 1,
                "an event did not set its flag and raise its SINT once");
  expect((*flags & bit) != 0, "an event did not set its flag");

  /* 2: the flag set already: no interrupt. */
  kv_status("evt2_status", signal_event(EVT_CONN), HV_STATUS_SUCCESS);
  delay_tsc(SETTLE_TSC);
  kv_dec("evt2_flag", (*flags & bit) != 0);
  kv_interrupts("evt2_interrupts", EVT_SINT, 1, "an event whose flag was set raised its SINT");
  expect((*flags & bit) != 0, "an event's flag was cleared");

  /* 3: the flag cleared by the guest: set again, a second interrupt. */
  __atomic_fetch_and(flags, ~bit, __ATOMIC_SEQ_CST);
  kv_status("evt3_status", signal_event(EVT_CONN), HV_STATUS_SUCCESS);
  wait_bits(flags, bit, bit);
  wait_interrupts(EVT_SINT, 2);
  delay_tsc(SETTLE_TSC);
  kv_dec("evt3_flag", (*flags & bit) != 0);
  kv_interrupts("evt3_interrupts", EVT_SINT, 2,
                "an event after its flag was cleared did not raise its SINT");
  expect((*flags & bit) != 0, "an event did not set its flag again");
  kv_hex("evt_other_flags", (*flags & ~bit) | siefp[EVT_SINT][0]);
  expect(((*flags & ~bit) | siefp[EVT_SINT][0]) == 0, "an event set some other flag");

  kv_status("evt_unknown_conn_status", signal_event(UNKNOWN_EVT_CONN),
            HV_STATUS_INVALID_CONNECTION_ID);
  testdev(TD_EVT_CONN_DESTROY, 0, EVT_CONN);
  sint_mask(EVT_SINT);
}

void guest_main(uint32_t magic, const struct multiboot_info* mbi) {
  (void)magic;
  (void)mbi;
  check_leaves();
  pic_mask_all();
  idt_init();
  x2apic_enable(SPURIOUS_VECTOR);
  irq_enable();

  synic_enable();
  test_sint_routes();

  setup_hypercall_page();
  kv_status("probe_status", signal_event(PROBE_CONN), HV_STATUS_INVALID_CONNECTION_ID);
  test_message_connection();
  test_event_connection();

  synic_disable();
  irq_disable();
  kv_dec("synic_control_writes", synic_control_writes);
  kv_dec("hypercalls", hypercalls);
  kv_dec("testdev_writes", testdev_writes);
  kv_dec("timed_out", timed_out);
  if (timed_out) expect(0, "a bounded wait ran out (no hyperv-testdev?)");
  if (first_failure) guest_fail(first_failure);
  guest_done();
}
