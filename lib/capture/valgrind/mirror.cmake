# cmake -DSOURCE=/usr/libexec/valgrind -DTARGET=dir -P mirror.cmake
# Makes TARGET hold a symlink to every entry of SOURCE (Valgrind's libexec folder), so that
# TARGET plus the memsnap tool executable can serve as VALGRIND_LIB. Entries named
# memsnap-* are left alone (they are ours).
if(NOT SOURCE OR NOT TARGET)
  message(FATAL_ERROR "mirror.cmake: give -DSOURCE=... -DTARGET=...")
endif()
file(MAKE_DIRECTORY "${TARGET}")
file(GLOB entries LIST_DIRECTORIES true RELATIVE "${SOURCE}" "${SOURCE}/*")
foreach(entry IN LISTS entries)
  if(entry MATCHES "^memsnap" OR entry MATCHES "^vgpreload_memsnap")
    continue()
  endif()
  file(CREATE_LINK "${SOURCE}/${entry}" "${TARGET}/${entry}" SYMBOLIC)
endforeach()
