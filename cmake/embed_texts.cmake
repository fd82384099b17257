# ab_embed_texts(OUT NAME_PART DELIMITER FILE...): sets OUT to one C++ initializer per file,
#   {"<name>", R"<DELIMITER>(<the file's text>)<DELIMITER>"},
# one a line, for a configure_file template; <name> is the file's name as get_filename_component
# NAME_PART gives it (NAME, NAME_WE). Each file becomes a configure dependency of the calling
# directory, so editing it re-embeds it.
function(ab_embed_texts out name_part delimiter)
  set(entries "")
  foreach(path ${ARGN})
    get_filename_component(name ${path} ${name_part})
    file(READ ${path} text)
    string(APPEND entries "    {\"${name}\", R\"${delimiter}(${text})${delimiter}\"},\n")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${path})
  endforeach()
  set(${out} "${entries}" PARENT_SCOPE)
endfunction()
