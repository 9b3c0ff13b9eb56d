# tg_c_blocks(PAGE PREFIX DIR OUT): every ```c block of the Markdown file
# PAGE is a complete program. At configure time each one is cut out into
# DIR/<PREFIX>_<n>.c (with a #line directive, so a compiler's message
# points into PAGE) and built against tapegrad as the target <PREFIX>_<n>
# (and libtapegrad_dist when it includes distributed/dist.h); OUT gets the
# targets. Editing PAGE runs the configure again. Other fences (```sh,
# ```python, ``` text) are illustrative and not built.
function(tg_c_blocks page prefix dir out)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${page})
  file(READ ${page} rest)
  set(targets "")
  set(n 0)
  set(line 1)   # the page's line where `rest` starts
  while(TRUE)
    string(FIND "${rest}" "```c\n" at)
    if(at EQUAL -1)
      break()
    endif()
    math(EXPR n "${n} + 1")
    math(EXPR body "${at} + 5")   # past the fence and its newline: the block's first code line
    string(SUBSTRING "${rest}" 0 ${body} before)
    string(REGEX MATCHALL "\n" nl "${before}")
    list(LENGTH nl nls)
    math(EXPR line "${line} + ${nls}")
    string(SUBSTRING "${rest}" ${body} -1 rest)
    string(FIND "${rest}" "\n```" end)
    if(end EQUAL -1)
      message(FATAL_ERROR "${page}: ```c block ${n} (line ${line}) is never closed")
    endif()
    math(EXPR end "${end} + 1")
    string(SUBSTRING "${rest}" 0 ${end} code)
    string(SUBSTRING "${rest}" ${end} -1 rest)
    string(REGEX MATCHALL "\n" nl "${code}")
    list(LENGTH nl nls)
    set(TG_BLOCK_CODE "#line ${line} \"${page}\"\n${code}")
    file(CONFIGURE OUTPUT ${dir}/${prefix}_${n}.c CONTENT "@TG_BLOCK_CODE@" @ONLY)
    math(EXPR line "${line} + ${nls}")
    add_executable(${prefix}_${n} ${dir}/${prefix}_${n}.c)
    target_link_libraries(${prefix}_${n} PRIVATE tapegrad)
    if(code MATCHES "distributed/dist.h")   # a program on several processes
      target_link_libraries(${prefix}_${n} PRIVATE tapegrad_dist)
    endif()
    list(APPEND targets ${prefix}_${n})
  endwhile()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()
