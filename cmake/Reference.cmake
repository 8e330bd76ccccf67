# memsnap's reference from one source, the help texts of the built binary
# (scripts/gen-reference.sh): the man pages and the bash completion, generated at build
# time and installed; `docs` (make docs) refreshes docs/cli.md's generated blocks; tests
# fail when docs/cli.md is stale or a getopt option is missing from its command's help.
set(MEMSNAP_REFERENCE_DIR ${CMAKE_BINARY_DIR}/reference)
set(MEMSNAP_GEN_REFERENCE ${PROJECT_SOURCE_DIR}/scripts/gen-reference.sh)

add_custom_command(OUTPUT ${MEMSNAP_REFERENCE_DIR}/memsnap.bash
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${MEMSNAP_REFERENCE_DIR}/man1
  COMMAND ${MEMSNAP_GEN_REFERENCE} $<TARGET_FILE:memsnap_cli> man ${MEMSNAP_REFERENCE_DIR}/man1
  COMMAND ${MEMSNAP_GEN_REFERENCE} $<TARGET_FILE:memsnap_cli> bash
    ${MEMSNAP_REFERENCE_DIR}/memsnap.bash
  DEPENDS memsnap_cli ${MEMSNAP_GEN_REFERENCE}
  COMMENT "man pages and bash completion from memsnap's help texts" VERBATIM)
add_custom_target(memsnap_reference ALL DEPENDS ${MEMSNAP_REFERENCE_DIR}/memsnap.bash)
install(DIRECTORY ${MEMSNAP_REFERENCE_DIR}/man1 DESTINATION ${CMAKE_INSTALL_MANDIR})
install(FILES ${MEMSNAP_REFERENCE_DIR}/memsnap.bash
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME memsnap)

add_custom_target(docs
  COMMAND ${MEMSNAP_GEN_REFERENCE} $<TARGET_FILE:memsnap_cli> docs
    ${PROJECT_SOURCE_DIR}/docs/cli.md
  DEPENDS memsnap_cli VERBATIM)

if(NOT MEMSNAP_FUZZ)
  foreach(check docs options man bash)
    set(argument ${PROJECT_SOURCE_DIR}/docs/cli.md)
    if(check STREQUAL options)
      set(argument ${PROJECT_SOURCE_DIR})
    elseif(check STREQUAL man)
      set(argument ${MEMSNAP_REFERENCE_DIR}/man1)
    elseif(check STREQUAL bash)
      set(argument ${MEMSNAP_REFERENCE_DIR}/memsnap.bash)
    endif()
    add_test(NAME test_reference_${check}
      COMMAND ${MEMSNAP_GEN_REFERENCE} $<TARGET_FILE:memsnap_cli> check-${check} ${argument})
    set_tests_properties(test_reference_${check} PROPERTIES LABELS cli TIMEOUT 120)
  endforeach()
endif()
