# SPDX-License-Identifier: BSD-3-Clause
# Writes OUT: a C file holding each Lua script of lua/ as a string and its
# SHA1, so the library needs no file at run time and can call EVALSHA first.
# OPS (comma-separated): operation scripts, lua/common.lua followed by
# lua/<op>.lua.  TEXT (comma-separated): scripts sent with their text every
# time (EVAL), on their own, kept short: each is sent as one line, without
# its comment lines and indentation.
# The table dl_scripts[] is indexed by DL_SCRIPT_<OP> (shim/calls.h), so
# the order of the lists does not matter; a script missing from either side
# fails the build.
# Inputs: OUT, LUA_DIR, OPS, TEXT.
string(REPLACE "," ";" OPS "${OPS}")
string(REPLACE "," ";" TEXT "${TEXT}")
file(READ ${LUA_DIR}/common.lua common)
set(body "/* Generated from lua/ by cmake/embed_lua.cmake: do not edit. */\n#include \"script.h\"\n\n")
set(table "")
set(count 0)
foreach(op ${OPS} ${TEXT})
  file(READ ${LUA_DIR}/${op}.lua text)
  list(FIND TEXT ${op} by_text)
  if(by_text GREATER -1)
    set(script "\n${text}")
    string(REGEX REPLACE "\n[ \t]*--[^\n]*" "" script "${script}")
    string(REGEX REPLACE "[ \t]*\n[ \t]*" "\n" script "${script}")
    string(REGEX REPLACE "\n+" " " script "${script}")
    string(STRIP "${script}" script)
    set(var "dl_${op}_lua")
    set(decl "const char ${var}[]")
    set(by_text 1)
  else()
    set(script "${common}\n${text}")
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
  string(APPEND table "    [DL_SCRIPT_${OP}] = { \"${op}\", \"${sha}\", ${var}, ${len}, ${by_text} },\n")
  math(EXPR count "${count} + 1")
endforeach()
string(APPEND body "const dl_script_t dl_scripts[] = {\n${table}};\n\n")
string(APPEND body "_Static_assert(DL_SCRIPT_COUNT == ${count}, \"a script of shim/calls.h is not embedded\");\n")
string(RANDOM LENGTH 8 tag)
file(WRITE ${OUT}.${tag}.tmp "${body}")
file(COPY_FILE ${OUT}.${tag}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.${tag}.tmp)
