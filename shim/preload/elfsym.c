/* SPDX-License-Identifier: BSD-3-Clause */
/* elfsym.c - finding a mapped global in this process.
 *
 * By name: the ELF symbol tables (.symtab, which also has file-static and
 * non-exported globals, and .dynsym) of the executable (/proc/self/exe)
 * and then of each library loaded at start, in load order, read from the
 * files; a name is compared with each symbol as it is and, unless it is
 * a mangled symbol itself, as the C++ name of a global that the symbol
 * demangles to (demangle.c: `app::counter_mutex`, or `m` for a C++
 * file-static, _ZL1m); the address is the object's load bias (dl_iterate_phdr) plus the
 * symbol's value, so PIE and non-PIE executables both work.  By offset:
 * exe+0xOFFSET is the executable's load bias plus OFFSET (the symbol's
 * value as `nm` prints it on an unstripped copy).
 *
 * Every result must lie in a writable PT_LOAD segment of its object and be
 * aligned for a pthread object: a wrong offset is reported, not trusted.
 * Runs only in the constructor; may allocate (it does not). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload.h"

#define MAX_OBJS 512

typedef struct obj {
    const char *name;         /* as the dynamic linker loaded it; "" for the executable */
    uintptr_t bias;
    const ElfW(Phdr) *phdr;
    int phnum;
    int is_exe, is_self;
} obj_t;

static obj_t objs[MAX_OBJS];
static int nobjs = -1;
static char exe_path[4096];

static int collect(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    if (nobjs >= MAX_OBJS)
        return 1;
    obj_t *o = &objs[nobjs++];
    o->name = info->dlpi_name ? info->dlpi_name : "";
    o->bias = (uintptr_t)info->dlpi_addr;
    o->phdr = info->dlpi_phdr;
    o->phnum = info->dlpi_phnum;
    o->is_exe = (uintptr_t)info->dlpi_phdr == (uintptr_t)getauxval(AT_PHDR);
    /* This library itself: never a place to look for the program's locks. */
    uintptr_t me = (uintptr_t)&collect;
    for (int i = 0; i < o->phnum; i++) {
        const ElfW(Phdr) *ph = &o->phdr[i];
        if (ph->p_type == PT_LOAD && me >= o->bias + ph->p_vaddr &&
            me < o->bias + ph->p_vaddr + ph->p_memsz)
            o->is_self = 1;
    }
    return 0;
}

static void load_objs(void)
{
    if (nobjs >= 0)
        return;
    nobjs = 0;
    dl_iterate_phdr(collect, NULL);
    int any_exe = 0;
    for (int i = 0; i < nobjs; i++)
        any_exe |= objs[i].is_exe;
    if (!any_exe && nobjs > 0)
        objs[0].is_exe = 1;           /* the first one is the program */
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[n > 0 ? n : 0] = 0;
}

const char *dlp_exe_path(void)
{
    load_objs();
    return exe_path;
}

void dlp_self_range(uintptr_t *lo, uintptr_t *hi)
{
    load_objs();
    *lo = UINTPTR_MAX;
    *hi = 0;
    for (int i = 0; i < nobjs; i++) {
        const obj_t *o = &objs[i];
        for (int k = 0; o->is_self && k < o->phnum; k++) {
            const ElfW(Phdr) *ph = &o->phdr[k];
            if (ph->p_type != PT_LOAD)
                continue;
            if (o->bias + ph->p_vaddr < *lo)
                *lo = o->bias + ph->p_vaddr;
            if (o->bias + ph->p_vaddr + ph->p_memsz > *hi)
                *hi = o->bias + ph->p_vaddr + ph->p_memsz;
        }
    }
}

/* Is [a, a+size) inside a writable loaded segment of o? */
static int writable(const obj_t *o, uintptr_t a, size_t size)
{
    for (int i = 0; i < o->phnum; i++) {
        const ElfW(Phdr) *ph = &o->phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        uintptr_t lo = o->bias + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (a >= lo && a <= hi && size <= hi - a)
            return 1;
    }
    return 0;
}

typedef struct hit {
    uintptr_t value;
    size_t size;
    int type;
} hit_t;

enum { FOUND = 1, NOT_ELF = -2, NO_FILE = -3 };

/* Looks sym up in the symbol tables of file.  Collects distinct
 * definitions (by value) in hits; returns their number, 0 if none, or
 * NO_FILE / NOT_ELF. */
static int file_lookup(const char *file, const char *sym, hit_t *hits, int max, int *has_symtab)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NO_FILE;
    struct stat st;
    if (fstat(fd, &st) || st.st_size < (off_t)sizeof(ElfW(Ehdr))) {
        close(fd);
        return NOT_ELF;
    }
    size_t fsize = (size_t)st.st_size;
    const unsigned char *m = mmap(NULL, fsize, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return NO_FILE;

    int nhits = 0;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff == 0 || eh->e_shoff >= fsize) {
        munmap((void *)m, fsize);
        return NOT_ELF;
    }
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(m + eh->e_shoff);
    size_t shnum = eh->e_shnum;
    if (shnum == 0 && eh->e_shoff + sizeof *sh <= fsize)
        shnum = sh[0].sh_size;         /* extended numbering */
    if (eh->e_shoff + shnum * sizeof *sh > fsize) {
        munmap((void *)m, fsize);
        return NOT_ELF;
    }
    size_t symlen = strlen(sym);
    /* A name that is not itself a mangled symbol is also a C++ name:
     * compared with what each mangled symbol demangles to. */
    int cxx = strncmp(sym, "_Z", 2) != 0;
    char dm[1024];
    for (size_t i = 0; i < shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM)
            continue;
        if (sh[i].sh_type == SHT_SYMTAB)
            *has_symtab = 1;
        if (sh[i].sh_link >= shnum || sh[i].sh_entsize != sizeof(ElfW(Sym)))
            continue;
        const ElfW(Shdr) *strsh = &sh[sh[i].sh_link];
        if (sh[i].sh_offset + sh[i].sh_size > fsize || strsh->sh_offset + strsh->sh_size > fsize)
            continue;
        const ElfW(Sym) *syms = (const ElfW(Sym) *)(m + sh[i].sh_offset);
        const char *strs = (const char *)(m + strsh->sh_offset);
        size_t nsyms = sh[i].sh_size / sizeof(ElfW(Sym));
        for (size_t k = 0; k < nsyms; k++) {
            const ElfW(Sym) *s = &syms[k];
            if (s->st_name == 0 || s->st_name >= strsh->sh_size)
                continue;
            if (s->st_shndx == SHN_UNDEF || s->st_shndx == SHN_ABS)
                continue;
            const char *nm = strs + s->st_name;
            size_t room = strsh->sh_size - s->st_name;
            int same = symlen < room && memcmp(nm, sym, symlen + 1) == 0;
            if (!same && cxx && memchr(nm, 0, room) && dlp_demangle_may_be(nm, sym) &&
                dlp_demangle_var(nm, dm, sizeof dm) == 0)
                same = strcmp(dm, sym) == 0;
            if (!same)
                continue;
            int dup = 0;
            for (int h = 0; h < nhits; h++)
                dup |= hits[h].value == s->st_value;
            if (dup || nhits >= max)
                continue;
            hits[nhits].value = s->st_value;
            hits[nhits].size = s->st_size;
            hits[nhits].type = ELF64_ST_TYPE(s->st_info);
            nhits++;
        }
    }
    munmap((void *)m, fsize);
    return nhits;
}

static int check_addr(const dlp_spec_t *s, const obj_t *o, uintptr_t a, size_t need,
                      const char *what, char *err, size_t errlen)
{
    if (a % s->kind->calign != 0) {
        snprintf(err, errlen, "%s: address %#lx is not aligned for a %s", what,
                 (unsigned long)a, s->kind->ctype);
        return -1;
    }
    if (!writable(o, a, need)) {
        snprintf(err, errlen, "%s: address %#lx is not inside a writable segment of %s",
                 what, (unsigned long)a, o->is_exe ? "the executable" : o->name);
        return -1;
    }
    return 0;
}

static int by_offset(const dlp_spec_t *s, size_t need, void **addr, char *where, size_t wlen,
                     char *err, size_t errlen)
{
    const obj_t *exe = NULL;
    for (int i = 0; i < nobjs; i++)
        if (objs[i].is_exe)
            exe = &objs[i];
    if (!exe) {
        snprintf(err, errlen, "%s: cannot find the executable's load address", s->target);
        return 1;
    }
    /* An offset names nothing: one that does not fit this executable is
     * as good as a symbol it lacks (it may be meant for another one). */
    uintptr_t a = exe->bias + s->offset;
    if (a < exe->bias) {
        snprintf(err, errlen, "%s: beyond the address space", s->target);
        return 1;
    }
    if (check_addr(s, exe, a, need, s->target, err, errlen))
        return 1;
    *addr = (void *)a;
    snprintf(where, wlen, "%s at %#lx", exe_path[0] ? exe_path : "executable", (unsigned long)a);
    return 0;
}

int dlp_elf_resolve(const dlp_spec_t *s, size_t need, void **addr, char *where, size_t wlen,
                    char *err, size_t errlen)
{
    load_objs();
    if (s->is_offset)
        return by_offset(s, need, addr, where, wlen, err, errlen);

    int exe_symtab = 0;
    /* The executable first (its copy of a library global is the live one),
     * then the libraries in load order. */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < nobjs; i++) {
            const obj_t *o = &objs[i];
            if (o->is_self || (pass == 0) != (o->is_exe != 0))
                continue;
            const char *file = o->is_exe ? "/proc/self/exe" : o->name;
            if (!file[0])
                continue;
            hit_t hits[8];
            int has_symtab = 0;
            int n = file_lookup(file, s->target, hits, 8, &has_symtab);
            if (o->is_exe)
                exe_symtab = has_symtab;
            if (n <= 0)
                continue;
            const char *oname = o->is_exe ? (exe_path[0] ? exe_path : "the executable") : o->name;
            if (n > 1) {
                snprintf(err, errlen, "symbol \"%s\" is defined %d times in %s (file-static "
                         "globals of the same name); map it by exe+0xOFFSET", s->target, n, oname);
                return -1;
            }
            if (hits[0].type == STT_FUNC || hits[0].type == STT_GNU_IFUNC ||
                hits[0].type == STT_TLS || hits[0].type == STT_SECTION || hits[0].type == STT_FILE) {
                snprintf(err, errlen, "symbol \"%s\" in %s is not a global variable", s->target, oname);
                return -1;
            }
            if (hits[0].size && hits[0].size < need) {
                snprintf(err, errlen, "symbol \"%s\" in %s is %zu bytes, too small for a %s (%zu)",
                         s->target, oname, hits[0].size, s->kind->ctype, need);
                return -1;
            }
            uintptr_t a = o->bias + hits[0].value;
            char what[512];
            snprintf(what, sizeof what, "symbol \"%.100s\" in %.300s", s->target, oname);
            if (check_addr(s, o, a, need, what, err, errlen))
                return -1;
            *addr = (void *)a;
            snprintf(where, wlen, "%s at %#lx", oname, (unsigned long)a);
            return 0;
        }
    }
    snprintf(err, errlen, "symbol \"%s\" not found in %s or its libraries%s", s->target,
             exe_path[0] ? exe_path : "the executable",
             exe_symtab ? "" : " (the executable is stripped: map it by exe+0xOFFSET)");
    return 1;
}
