# gcomm_add_test(NAME SOURCES src... LABELS lab... [LIBS lib...] [NPROCS n] [ARGS a...] [TIMEOUT s])
# Registers a CTest test. GPU tests exit 77 when there is no GPU: CTest reports them as skipped.
# NPROCS > 0 runs the test under mpiexec with that many processes (oversubscribed, root allowed).
function(gcomm_add_test name)
  cmake_parse_arguments(T "" "NPROCS;TIMEOUT" "SOURCES;LABELS;LIBS;ARGS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE gcomm gcomm_testutil ${T_LIBS})
  if(T_NPROCS)
    set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_NPROCS} --oversubscribe
            $<TARGET_FILE:${name}> ${T_ARGS})
  else()
    set(cmd $<TARGET_FILE:${name}> ${T_ARGS})
  endif()
  add_test(NAME ${name} COMMAND ${cmd})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" SKIP_RETURN_CODE 77
                       TIMEOUT ${T_TIMEOUT}
                       ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")
endfunction()
