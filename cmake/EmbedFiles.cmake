# attnc_embed_files(TARGET OUT_CPP BASE_DIR FILES...)
# Writes OUT_CPP defining attnc::embedded_templates(): one {path, text} entry per file, path
# relative to BASE_DIR. Re-run whenever a file changes, so the library always carries the current
# templates.
function(attnc_embed_files out_cpp base_dir)
  set(files ${ARGN})
  add_custom_command(
    OUTPUT ${out_cpp}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out_cpp} -DBASE=${base_dir} "-DFILES=${files}"
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedFilesScript.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/EmbedFilesScript.cmake
    COMMENT "Embedding templates into ${out_cpp}"
    VERBATIM)
endfunction()
