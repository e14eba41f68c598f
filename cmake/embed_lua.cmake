# SPDX-License-Identifier: BSD-3-Clause
# Writes OUT, a C file holding each Lua script of lua/ as a string with its
# SHA1 (so the library needs no file at run time and can call EVALSHA
# first), and OUT_H, the list of the scripts that C reads: the X-macro
# DL_SCRIPT_LIST and the DL_SCRIPT_* ids (the entries and script.c include
# it; a user of a call includes only its call_<name>.h).  OUT includes
# every entry header and checks that each script's types fit a call
# (DL_CALL_ARGS_SIZE, DL_CALL_REPLY_SIZE, caller.h).
#
# SCRIPTS (comma-separated): the scripts' names, lua/<name>.lua each, with
# its entry shim/script/call_<name>.{h,c}.  A script whose header has the
# line `--! sent with its text` is sent with its text every time (EVAL),
# on its own, kept short: it is sent as one line, without its comment
# lines and indentation.  Every other script is lua/common.lua followed by
# lua/<name>.lua, called by its SHA1; a script lua/<kind>_<op>.lua whose
# kind has helpers of its own, lua/<kind>_common.lua, gets them between
# the two (the semaphore's scripts: sem_common.lua).
# dl_scripts[] is indexed by DL_SCRIPT_<NAME>, so the order of
# the list does not matter.  OUT_H is written only when the list changes,
# so a change of a script's text rebuilds only OUT.
# Inputs: OUT, OUT_H, LUA_DIR, ENTRY_DIR (shim/script), SCRIPTS.
string(REPLACE "," ";" SCRIPTS "${SCRIPTS}")
file(READ ${LUA_DIR}/common.lua common)
set(body "/* Generated from lua/ by cmake/embed_lua.cmake: do not edit. */\n#include \"dl_script_list.h\"\n#include \"script.h\"\n")
set(table "")
set(includes "")
set(entries "")
set(fits "")
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
  string(APPEND entries "extern const dl_script_entry_t dl_entry_${op};\n")
  file(STRINGS ${ENTRY_DIR}/call_${op}.h typedefs REGEX "^typedef [a-z_]+ dl_call_(args|reply)_[a-z_]+;$")
  foreach(td ${typedefs})
    string(REGEX REPLACE "^typedef [a-z_]+ (dl_call_(args|reply)_[a-z_]+);$" "\\1" tn "${td}")
    if(tn MATCHES "^dl_call_args_")
      string(APPEND fits "ARGS_FIT(${tn})\n")
    else()
      string(APPEND fits "REPLY_FIT(${tn})\n")
    endif()
  endforeach()
  string(APPEND list " \\\n    X(${OP}, ${op})")
  math(EXPR count "${count} + 1")
endforeach()
string(APPEND body "${includes}\n${entries}\n")
string(APPEND body "const dl_script_t dl_scripts[] = {\n${table}};\n\n")
string(APPEND body "/* Every script's types fit a call (caller.h). */\n")
string(APPEND body "#define FITS(t, size) _Static_assert(sizeof(t) <= (size), #t \" fits a call\");\n")
string(APPEND body "#define ARGS_FIT(t) FITS(t, DL_CALL_ARGS_SIZE)\n#define REPLY_FIT(t) FITS(t, DL_CALL_REPLY_SIZE)\n")
string(APPEND body "${fits}\n")
string(APPEND body "_Static_assert(DL_SCRIPT_COUNT == ${count}, \"dl_scripts[] has every script\");\n")

set(header "/* Generated from lua/ by cmake/embed_lua.cmake: do not edit.\n")
string(APPEND header " * The scripts: lua/<name>.lua each, with its entry shim/script/call_<name>.{h,c}. */\n")
string(APPEND header "#ifndef DL_SCRIPT_LIST_H\n#define DL_SCRIPT_LIST_H\n\n")
string(APPEND header "/* X(ID, name) for every script. */\n#define DL_SCRIPT_LIST(X)${list}\n\n")
string(APPEND header "/* The scripts' ids: dl_scripts[] (script.h) is indexed by them. */\n")
string(APPEND header "#define DL_SCRIPT_ID_(ID, name) DL_SCRIPT_##ID,\n")
string(APPEND header "enum { DL_SCRIPT_LIST(DL_SCRIPT_ID_) DL_SCRIPT_COUNT };\n#undef DL_SCRIPT_ID_\n\n#endif\n")

string(RANDOM LENGTH 8 tag)
foreach(pair "OUT;body" "OUT_H;header")
  list(GET pair 0 out)
  list(GET pair 1 content)
  file(WRITE ${${out}}.${tag}.tmp "${${content}}")
  file(COPY_FILE ${${out}}.${tag}.tmp ${${out}} ONLY_IF_DIFFERENT)
  file(REMOVE ${${out}}.${tag}.tmp)
endforeach()
