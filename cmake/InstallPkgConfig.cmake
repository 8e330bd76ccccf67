# Writes memsnap.pc at install time (included by the top-level CMakeLists.txt's install
# code): the prefix is CMAKE_INSTALL_PREFIX as `cmake --install` has it, without DESTDIR.
# A libdir outside the linker's default folders is also the run-time search path
# (-Wl,-rpath), so that a program built with `pkg-config --libs memsnap` runs without
# LD_LIBRARY_PATH.
set(prefix "${CMAKE_INSTALL_PREFIX}")
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${MEMSNAP_PC_${dir}}")
    set(MEMSNAP_PC_${dir}_LINE "${MEMSNAP_PC_${dir}}")
    set(MEMSNAP_PC_${dir}_FULL "${MEMSNAP_PC_${dir}}")
  else()
    set(MEMSNAP_PC_${dir}_LINE "\${prefix}/${MEMSNAP_PC_${dir}}")
    set(MEMSNAP_PC_${dir}_FULL "${prefix}/${MEMSNAP_PC_${dir}}")
  endif()
endforeach()
set(MEMSNAP_PC_RPATH "")
list(FIND MEMSNAP_PC_SYSTEM_LIBDIRS "${MEMSNAP_PC_LIBDIR_FULL}" system_libdir)
if(system_libdir EQUAL -1)
  set(MEMSNAP_PC_RPATH " -Wl,-rpath,\${libdir}")
endif()
set(MEMSNAP_PC_FILE "$ENV{DESTDIR}${MEMSNAP_PC_LIBDIR_FULL}/pkgconfig/memsnap.pc")
message(STATUS "Installing: ${MEMSNAP_PC_FILE}")
configure_file("${MEMSNAP_PC_TEMPLATE}" "${MEMSNAP_PC_FILE}" @ONLY)
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${MEMSNAP_PC_FILE}")
