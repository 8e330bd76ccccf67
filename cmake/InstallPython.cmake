# Installs the memsnap Python package (included by python/CMakeLists.txt's install code):
# into the folder where MEMSNAP_PYTHON3 finds packages of the prefix (python/site_dir.py),
# with a _config.py that names the installed library and Valgrind tool. The prefix is
# CMAKE_INSTALL_PREFIX as `cmake --install` has it; the paths written have no DESTDIR.
set(prefix "${CMAKE_INSTALL_PREFIX}")
execute_process(COMMAND "${MEMSNAP_PYTHON3}" "${MEMSNAP_PYTHON_SITE_DIR_SCRIPT}" "${prefix}"
  OUTPUT_VARIABLE site_dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR site_dir STREQUAL "")
  message(FATAL_ERROR "${MEMSNAP_PYTHON3} could not say where packages of ${prefix} go")
endif()

foreach(name LIBRARY VALGRIND_LIB)
  set(path "${MEMSNAP_PYTHON_${name}}")
  if(path STREQUAL "")
    set(${name}_LINE "None")
  elseif(IS_ABSOLUTE "${path}")
    set(${name}_LINE "\"${path}\"")
  else()
    set(${name}_LINE "\"${prefix}/${path}\"")
  endif()
endforeach()

# file(INSTALL) prepends DESTDIR itself; file(WRITE) does not.
file(INSTALL ${MEMSNAP_PYTHON_SOURCES} DESTINATION "${site_dir}/memsnap")
set(package_dir "$ENV{DESTDIR}${site_dir}/memsnap")
message(STATUS "Installing: ${package_dir}/_config.py")
file(WRITE "${package_dir}/_config.py" "# Written by `make install` (cmake/InstallPython.cmake).
LIBRARY = ${LIBRARY_LINE}
VALGRIND_LIB = ${VALGRIND_LIB_LINE}
")
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${package_dir}/_config.py")
