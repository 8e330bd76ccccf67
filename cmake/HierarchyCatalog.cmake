# The cache hierarchy catalog (data/hierarchies.tsv) as a C table generated at build time into
# lib/'s binary folder, where lib/cache/catalog.c includes it. Include once, after the
# memsnap_objects target exists: include(${PROJECT_SOURCE_DIR}/cmake/HierarchyCatalog.cmake)
set(MEMSNAP_HIERARCHY_CATALOG ${PROJECT_BINARY_DIR}/lib/hierarchy_catalog.h)
add_custom_command(OUTPUT ${MEMSNAP_HIERARCHY_CATALOG}
  COMMAND ${CMAKE_COMMAND} -DINPUT=${PROJECT_SOURCE_DIR}/data/hierarchies.tsv
          -DOUTPUT=${MEMSNAP_HIERARCHY_CATALOG}
          -P ${PROJECT_SOURCE_DIR}/cmake/GenerateHierarchyCatalog.cmake
  DEPENDS ${PROJECT_SOURCE_DIR}/data/hierarchies.tsv
          ${PROJECT_SOURCE_DIR}/cmake/GenerateHierarchyCatalog.cmake
  COMMENT "Generating the cache hierarchy catalog from data/hierarchies.tsv" VERBATIM)
add_custom_target(memsnap_hierarchy_catalog DEPENDS ${MEMSNAP_HIERARCHY_CATALOG})
add_dependencies(memsnap_objects memsnap_hierarchy_catalog)
