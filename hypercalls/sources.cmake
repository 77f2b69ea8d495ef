# The host side of the hypercall ABI as one list of sources, for the
# library (hypercalls/CMakeLists.txt) and the fuzzers (fuzz/CMakeLists.txt):
# the policies named here and every handler in handlers/, one file per
# hypercall, found by name (a new handler needs no line here).
file(GLOB MINIVMM_HYPERCALL_HANDLER_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_LIST_DIR}/handlers/*.cc)
list(SORT MINIVMM_HYPERCALL_HANDLER_SOURCES)
set(MINIVMM_HYPERCALL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/descriptor.cc
  ${CMAKE_CURRENT_LIST_DIR}/dispatcher.cc
  ${CMAKE_CURRENT_LIST_DIR}/gdt_store.cc
  ${CMAKE_CURRENT_LIST_DIR}/guest_errno.cc
  ${CMAKE_CURRENT_LIST_DIR}/mmuext_policy.cc
  ${CMAKE_CURRENT_LIST_DIR}/pte_policy.cc
  ${CMAKE_CURRENT_LIST_DIR}/report_parser.cc
  ${MINIVMM_HYPERCALL_HANDLER_SOURCES})
