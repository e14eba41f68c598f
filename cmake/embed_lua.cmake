# SPDX-License-Identifier: BSD-3-Clause
# Writes OUT, a C file holding each Lua script of lua/ as a string with its
# SHA1 (so the library needs no file at run time and can call EVALSHA
# first), and OUT_H, the list of the scripts that C reads (calls.h): each
# script's entry header and the X-macro DL_SCRIPT_LIST.
#
# SCRIPTS (comma-separated): the scripts' names, lua/<name>.lua each, with
# its entry shim/script/call_<name>.{h,c}.  A script whose header has the
# line `--! sent with its text` is sent with its text every time (EVAL),
# on its own, kept short: it is sent as one line, without its comment
# lines and indentation.  Every other script is lua/common.lua followed by
# lua/<name>.lua, called by its SHA1; a script lua/<kind>_<op>.lua whose
# kind has helpers of its own, lua/<kind>_common.lua, gets them between
# the two (the semaphore's scripts: sem_common.lua).
# dl_scripts[] is indexed by DL_SCRIPT_<NAME> (calls.h), so the order of
# the list does not matter.  OUT_H is written only when the list changes,
# so a change of a script's text rebuilds only OUT.
# Inputs: OUT, OUT_H, LUA_DIR, SCRIPTS.
string(REPLACE "," ";" SCRIPTS "${SCRIPTS}")
file(READ ${LUA_DIR}/common.lua common)
set(body "/* Generated from lua/ by cmake/embed_lua.cmake: do not edit. */\n#include \"script.h\"\n\n")
set(table "")
set(includes "")
set(list "")
set(count 0)
foreach(op ${SCRIPTS})
  file(READ ${LUA_DIR}/${op}.lua text)
  file(STRINGS ${LUA_DIR}/${op}.lua by_text REGEX "^--! sent with its text$")
  if(by_text)
    set(script "\n${text}")
    string(REGEX REPLACE "\n[ \t]*--[^\n]*" "" script "${script}")
    string(REGEX REPLACE "[ \t]*\n[ \t]*" "\n" script "${script}")
    string(REGEX REPLACE "\n+" " " script "${script}")
    string(STRIP "${script}" script)
    set(var "dl_${op}_lua")
    set(decl "const char ${var}[]")
    set(by_text 1)
  else()
    set(kind_common "")
    string(REGEX MATCH "^[a-z]+_" kind "${op}")
    if(kind AND EXISTS ${LUA_DIR}/${kind}common.lua)
      file(READ ${LUA_DIR}/${kind}common.lua kind_common)
      set(kind_common "${kind_common}\n")
    endif()
    set(script "${common}\n${kind_common}${text}")
    set(var "dl_lua_${op}")
    set(decl "static const char ${var}[]")
    set(by_text 0)
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
