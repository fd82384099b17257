# In-tree headers are included by their path from the repository root ("ir/ir.h"), yet the root
# is nobody's include directory: it would make engine/*/*, the engine's internals, reachable
# from everywhere. Instead each layer exports a folder of the build tree that holds links to its
# own source folder only, so code reaches the layers it links (ir <- passes <- lang, cpu <- core <- trace <- engine <- bench
# <- tools) and nothing else. The engine and its white-box tests alone add the root, privately.
#
# ab_layer_headers(TARGET PUBLIC|PRIVATE PATH...): makes "PATH/..." (a folder) or "PATH" (one
# header) includable by TARGET, and with PUBLIC by what links it. Set AB_SOURCE_ROOT first.
function(ab_layer_headers target scope)
  set(dir ${CMAKE_BINARY_DIR}/layer_headers/${target}_${scope})
  foreach(path ${ARGN})
    get_filename_component(parent ${dir}/${path} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${AB_SOURCE_ROOT}/${path} ${dir}/${path} SYMBOLIC)
  endforeach()
  target_include_directories(${target} ${scope} ${dir})
endfunction()
