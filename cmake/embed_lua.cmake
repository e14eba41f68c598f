# SPDX-License-Identifier: BSD-3-Clause
# Writes OUT: a C file holding each Lua operation script (lua/common.lua
# followed by lua/<op>.lua) as a string and its SHA1, so the library needs no
# file at run time and can call EVALSHA first.
# Inputs: OUT, LUA_DIR, OPS (comma-separated).
string(REPLACE "," ";" OPS "${OPS}")
file(READ ${LUA_DIR}/common.lua common)
set(body "/* Generated from lua/ by cmake/embed_lua.cmake: do not edit. */\n#include \"script.h\"\n\n")
set(table "")
foreach(op ${OPS})
  file(READ ${LUA_DIR}/${op}.lua text)
  set(script "${common}\n${text}")
  string(SHA1 sha "${script}")
  string(LENGTH "${script}" len)
  string(REPLACE "\\" "\\\\" esc "${script}")
  string(REPLACE "\"" "\\\"" esc "${esc}")
  string(REPLACE "\n" "\\n\"\n\"" esc "${esc}")
  string(APPEND body "static const char dl_lua_${op}[] =\n\"${esc}\";\n\n")
  string(APPEND table "    { \"${op}\", \"${sha}\", dl_lua_${op}, ${len} },\n")
endforeach()
string(APPEND body "const dl_script_t dl_scripts[] = {\n${table}};\n")
string(RANDOM LENGTH 8 tag)
file(WRITE ${OUT}.${tag}.tmp "${body}")
file(COPY_FILE ${OUT}.${tag}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.${tag}.tmp)
