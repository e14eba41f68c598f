# SPDX-License-Identifier: BSD-3-Clause
# Writes OUT, a C file holding each Lua script of lua/ as a string with its
# SHA1 (so the library needs no file at run time and can call EVALSHA
# first), and OUT_H, the list of the scripts that C reads (calls.h): each
# script's entry header and the X-macro DL_SCRIPT_LIST.
#
# SCRIPTS (comma-separated): the scripts' names, lua/<name>.lua each, with
# its entry shim/script/call_<name>.{h,c}.  What text each script is
# (lua/common.lua and the script, a kind's helpers between them, a fast
# path put inside common.lua; or a short script sent with its text) is
# cmake/lua_assemble.cmake's.
# dl_scripts[] is indexed by DL_SCRIPT_<NAME> (calls.h), so the order of
# the list does not matter.  OUT_H is written only when the list changes,
# so a change of a script's text rebuilds only OUT.
# Inputs: OUT, OUT_H, LUA_DIR, SCRIPTS.
include(${CMAKE_CURRENT_LIST_DIR}/lua_assemble.cmake)
string(REPLACE "," ";" SCRIPTS "${SCRIPTS}")
set(body "/* Generated from lua/ by cmake/embed_lua.cmake: do not edit. */\n#include \"script.h\"\n\n")
set(table "")
set(includes "")
set(list "")
set(count 0)
foreach(op ${SCRIPTS})
  dl_lua_assemble(${LUA_DIR} ${op} script by_text)
  if(by_text)
    set(var "dl_${op}_lua")
    set(decl "const char ${var}[]")
  else()
    set(var "dl_lua_${op}")
    set(decl "static const char ${var}[]")
  endif()
  string(SHA1 sha "${script}")
  string(LENGTH "${script}" len)
  string(REPLACE "\\" "\\\\" esc "${script}")
  string(REPLACE "\"" "\\\"" esc "${esc}")
  string(REPLACE "\n" "\\n\"\n\"" esc "${esc}")
  string(TOUPPER "${op}" OP)
  string(APPEND body "${decl} =\n\"${esc}\";\n\n")
  string(APPEND table
         "    [DL_SCRIPT_${OP}] = { \"${op}\", \"${sha}\", ${var}, ${len}, ${by_text}, &dl_entry_${op} },\n")
  string(APPEND includes "#include \"call_${op}.h\"\n")
  string(APPEND list " \\\n    X(${OP}, ${op})")
  math(EXPR count "${count} + 1")
endforeach()
string(APPEND body "const dl_script_t dl_scripts[] = {\n${table}};\n\n")
string(APPEND body "_Static_assert(DL_SCRIPT_COUNT == ${count}, \"dl_scripts[] has every script\");\n")

set(header "/* Generated from lua/ by cmake/embed_lua.cmake: do not edit.\n")
string(APPEND header " * The scripts: lua/<name>.lua each, with its entry shim/script/call_<name>.{h,c}. */\n")
string(APPEND header "#ifndef DL_SCRIPT_LIST_H\n#define DL_SCRIPT_LIST_H\n\n${includes}\n")
string(APPEND header "/* X(ID, name) for every script. */\n#define DL_SCRIPT_LIST(X)${list}\n\n#endif\n")

string(RANDOM LENGTH 8 tag)
foreach(pair "OUT;body" "OUT_H;header")
  list(GET pair 0 out)
  list(GET pair 1 content)
  file(WRITE ${${out}}.${tag}.tmp "${${content}}")
  file(COPY_FILE ${${out}}.${tag}.tmp ${${out}} ONLY_IF_DIFFERENT)
  file(REMOVE ${${out}}.${tag}.tmp)
endforeach()
