# Finds memsnap's Debian dependencies and names the package to install when one is missing.
find_package(PkgConfig)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: install the Debian package 'pkg-config' (or run scripts/install-deps.sh)")
endif()

function(memsnap_require target module debian_package)
  pkg_check_modules(${target} IMPORTED_TARGET ${module})
  if(NOT ${target}_FOUND)
    message(FATAL_ERROR "${module} not found: install the Debian package '${debian_package}' (or run scripts/install-deps.sh)")
  endif()
endfunction()

memsnap_require(ZSTD libzstd libzstd-dev)
memsnap_require(LIBDW libdw libdw-dev)
memsnap_require(JSONC json-c libjson-c-dev)
if(NOT MEMSNAP_FUZZ)
  memsnap_require(CMOCKA cmocka libcmocka-dev)
endif()

find_program(VALGRIND_EXECUTABLE valgrind)
if(NOT VALGRIND_EXECUTABLE)
  message(FATAL_ERROR "valgrind not found: install the Debian package 'valgrind'")
endif()
set(VALGRIND_PKGLIBDIR "/usr/lib/x86_64-linux-gnu/valgrind" CACHE PATH "Valgrind's static tool libraries")
set(VALGRIND_LIBEXECDIR "/usr/libexec/valgrind" CACHE PATH "Valgrind's libexec folder (tools, preloads, suppressions)")
set(VALGRIND_INCLUDEDIR "/usr/include/valgrind" CACHE PATH "Valgrind's tool headers")
foreach(f libcoregrind-amd64-linux.a libvex-amd64-linux.a libgcc-sup-amd64-linux.a)
  if(NOT EXISTS "${VALGRIND_PKGLIBDIR}/${f}")
    message(FATAL_ERROR "${VALGRIND_PKGLIBDIR}/${f} not found: install the Debian package 'valgrind' (it ships the static tool libraries)")
  endif()
endforeach()
if(NOT EXISTS "${VALGRIND_INCLUDEDIR}/pub_tool_tooliface.h")
  message(FATAL_ERROR "${VALGRIND_INCLUDEDIR}/pub_tool_tooliface.h not found: install the Debian package 'valgrind'")
endif()

# memsnap plot draws its pictures through gnuplot (PNG with pngcairo, SVG); the plot tests
# need it.
find_program(GNUPLOT_EXECUTABLE gnuplot)
if(NOT GNUPLOT_EXECUTABLE)
  message(FATAL_ERROR "gnuplot not found: install the Debian package 'gnuplot-nox' (memsnap plot draws through it; or run scripts/install-deps.sh)")
endif()

# Open MPI: tests/kernels/mpi_ring.c, the program of the multi-process tests (memsnap
# itself does not link MPI; it runs under mpirun like any rank) and memsnap-merge-mpi.
find_package(MPI COMPONENTS C QUIET)
if(NOT MPI_C_FOUND OR NOT MPIEXEC_EXECUTABLE)
  message(FATAL_ERROR "MPI (mpicc, mpirun) not found: install the Debian packages 'openmpi-bin' and 'libopenmpi-dev' (or run scripts/install-deps.sh)")
endif()
