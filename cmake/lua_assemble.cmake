# SPDX-License-Identifier: BSD-3-Clause
# The text Redis runs for one script of lua/: used by cmake/embed_lua.cmake
# for the library, and by the tools that measure the scripts
# (tools/cost/script-cost.sh), so that both run the same text.
#
#   include(lua_assemble.cmake)
#   dl_lua_assemble(<LUA_DIR> <name> <out-var> <by-text-var>)
#   cmake -DLUA_DIR=lua -DOP=<name> -P cmake/lua_assemble.cmake   (prints it)
#
# A script whose header has the line `--! sent with its text` is sent with
# its text every time (EVAL), on its own, kept short: it is sent as one
# line, without its comment lines and indentation (by-text-var: 1).
# Every other script is lua/common.lua followed by lua/<name>.lua, called
# by its SHA1; a script lua/<kind>_<op>.lua whose kind has helpers of its
# own, lua/<kind>_common.lua, gets them between the two (the semaphore's
# scripts: sem_common.lua).
#
# A script's fast path: the lines of lua/<name>.lua between `--! fast path`
# and `--! end of fast path` go where common.lua has its line `--! fast
# paths`, after the few helpers a fast path may use and before the many it
# does not (every `local function` costs Redis at each call of the script,
# and an uncontended lock call needs none of them: docs/PERFORMANCE.md,
# "Script cost").  The rest of the script follows common.lua as usual.
function(dl_lua_assemble dir op out_var by_text_var)
  file(READ ${dir}/${op}.lua text)
  file(STRINGS ${dir}/${op}.lua by_text REGEX "^--! sent with its text$")
  if(by_text)
    set(script "\n${text}")
    string(REGEX REPLACE "\n[ \t]*--[^\n]*" "" script "${script}")
    string(REGEX REPLACE "[ \t]*\n[ \t]*" "\n" script "${script}")
    string(REGEX REPLACE "\n+" " " script "${script}")
    string(STRIP "${script}" script)
    set(${out_var} "${script}" PARENT_SCOPE)
    set(${by_text_var} 1 PARENT_SCOPE)
    return()
  endif()
  file(READ ${dir}/common.lua common)
  set(kind_common "")
  string(REGEX MATCH "^[a-z]+_" kind "${op}")
  if(kind AND EXISTS ${dir}/${kind}common.lua)
    file(READ ${dir}/${kind}common.lua kind_common)
    set(kind_common "${kind_common}\n")
  endif()
  set(open "\n--! fast path\n")
  set(close "\n--! end of fast path\n")
  string(FIND "${text}" "${open}" from)
  string(FIND "${text}" "${close}" to)
  if(from EQUAL -1 AND to EQUAL -1)
    set(${out_var} "${common}\n${kind_common}${text}" PARENT_SCOPE)
    set(${by_text_var} 0 PARENT_SCOPE)
    return()
  endif()
  set(slot "\n--! fast paths\n")
  string(FIND "${common}" "${slot}" at)
  if(from EQUAL -1 OR to LESS from OR at EQUAL -1)
    message(FATAL_ERROR "lua/${op}.lua: a fast path needs its two lines, "
                        "`--! fast path` then `--! end of fast path`, and "
                        "lua/common.lua its line `--! fast paths`")
  endif()
  string(LENGTH "${open}" open_len)
  string(LENGTH "${close}" close_len)
  string(LENGTH "${slot}" slot_len)
  math(EXPR fast_from "${from} + ${open_len}")
  math(EXPR fast_len "${to} - ${fast_from}")
  math(EXPR after_close "${to} + ${close_len}")
  math(EXPR after_slot "${at} + ${slot_len}")
  string(SUBSTRING "${text}" 0 ${from} before)
  string(SUBSTRING "${text}" ${fast_from} ${fast_len} fast)
  string(SUBSTRING "${text}" ${after_close} -1 after)
  string(SUBSTRING "${common}" 0 ${at} common_head)
  string(SUBSTRING "${common}" ${after_slot} -1 common_tail)
  set(${out_var}
      "${common_head}\n-- (${op}.lua's fast path)\n${fast}\n${common_tail}\n${kind_common}${before}\n${after}"
      PARENT_SCOPE)
  set(${by_text_var} 0 PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE AND DEFINED OP)
  dl_lua_assemble(${LUA_DIR} ${OP} script by_text)
  execute_process(COMMAND ${CMAKE_COMMAND} -E echo_append "${script}")
endif()
