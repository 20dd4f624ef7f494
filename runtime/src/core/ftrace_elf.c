// SPDX-License-Identifier: Apache-2.0
/*
 * ftrace_elf.c - what the runtime reads from the files of loaded objects: the location
 * of the __mcount_loc table (section headers are not loaded into memory) and the symbol
 * tables used to match filter patterns.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/arch.h"
#include "ftrt_core.h"

static int read_at(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, off + (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* Read the ELF header and section headers of an open file; *shdr is malloc'ed. */
static int read_shdrs(int fd, Elf64_Ehdr *eh, Elf64_Shdr **shdr, size_t *shnum)
{
	Elf64_Shdr first;
	size_t n;

	if (read_at(fd, eh, sizeof(*eh), 0))
		return -EIO;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_machine != FTRT_ARCH_ELF_MACHINE || eh->e_shentsize != sizeof(Elf64_Shdr) || !eh->e_shoff)
		return -EINVAL;
	n = eh->e_shnum;
	if (!n) {
		if (read_at(fd, &first, sizeof(first), (off_t)eh->e_shoff))
			return -EIO;
		n = first.sh_size;
	}
	if (!n || n > (1u << 20))
		return -EINVAL;
	*shdr = malloc(n * sizeof(Elf64_Shdr));
	if (!*shdr)
		return -ENOMEM;
	if (read_at(fd, *shdr, n * sizeof(Elf64_Shdr), (off_t)eh->e_shoff)) {
		free(*shdr);
		return -EIO;
	}
	*shnum = n;
	return 0;
}

static char *read_section(int fd, const Elf64_Shdr *sh)
{
	char *p;

	if (sh->sh_type == SHT_NOBITS || sh->sh_size > (1ul << 31))
		return NULL;
	p = malloc(sh->sh_size + 1);
	if (!p)
		return NULL;
	if (read_at(fd, p, sh->sh_size, (off_t)sh->sh_offset)) {
		free(p);
		return NULL;
	}
	p[sh->sh_size] = 0;
	return p;
}

/*
 * Find the __mcount_loc section of path: its link-time address and size.
 * Returns 0, -ENOENT when there is none, or -errno.
 */
int ftrt_elf_find_table(const char *path, uintptr_t *addr, size_t *size)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	size_t shnum, i, strndx;
	char *names = NULL;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = read_shdrs(fd, &eh, &sh, &shnum);
	if (ret)
		goto out;
	strndx = eh.e_shstrndx == SHN_XINDEX ? sh[0].sh_link : eh.e_shstrndx;
	ret = -EINVAL;
	if (strndx >= shnum)
		goto out;
	names = read_section(fd, &sh[strndx]);
	if (!names)
		goto out;
	ret = -ENOENT;
	for (i = 1; i < shnum; i++) {
		if (sh[i].sh_name >= sh[strndx].sh_size)
			continue;
		if (!strcmp(names + sh[i].sh_name, "__mcount_loc") &&
		    (sh[i].sh_flags & SHF_ALLOC) && sh[i].sh_type == SHT_PROGBITS) {
			*addr = sh[i].sh_addr;
			*size = sh[i].sh_size;
			ret = 0;
			break;
		}
	}
out:
	free(names);
	free(sh);
	close(fd);
	return ret;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct ftrt_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)		/* the preferred alias last: lookup takes the last */
		return x->rank < y->rank ? -1 : 1;
	return strcmp(y->name, x->name);	/* of equals, the first name (internal/elfsym) */
}

/*
 * Which of several symbols at one address names the function: a sized one, then a global
 * or weak one, then one without a compiler suffix (gcc's "fib.localalias", ".cold",
 * ".isra.0" …).
 */
static int sym_rank(const Elf64_Sym *st, const char *name)
{
	unsigned bind = ELF64_ST_BIND(st->st_info);

	return (st->st_size ? 4 : 0) + (bind != STB_LOCAL ? 2 : 0) + (strchr(name, '.') ? 0 : 1);
}

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

/*
 * C++'s operator symbols of more than one character, longest first: the symbol after
 * "operator" is the longest that starts there, so "operator+<long, int>" is operator+ and
 * its template arguments (whose comma splits no filter list), not an operator "+<" (the
 * leveldb trial: 'ns::operator+<*' matched nothing, and 'int>' matched it).
 */
static const char *const operator_tokens[] = {
	"<=>", "<<=", ">>=", "->*", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
	"++", "--", "+=", "-=", "*=", "/=", "%=", "^=", "&=", "|=", "->", "()", "[]",
};

const char *ftrt_operator_end(const char *s, const char *p)
{
	size_t k;

	if (strncmp(p, "operator", 8) || isalnum((unsigned char)p[8]) || p[8] == '_' ||
	    (p != s && (isalnum((unsigned char)p[-1]) || p[-1] == '_')))
		return NULL;
	p += 8;
	if (!*p)
		return p - 1;
	for (k = 0; k < sizeof(operator_tokens) / sizeof(operator_tokens[0]); k++)
		if (!strncmp(p, operator_tokens[k], strlen(operator_tokens[k]))) {
			p += strlen(operator_tokens[k]) - 1;
			break;
		}
	if (p[1] == ' ' && p[2] == '<')
		p++;		/* "operator< <T>": the space before template arguments */
	return p;
}

/*
 * The demangled name of a function template instance starts with its return type
 * ("int ns::twice<int>(int)", "decltype ({parm#1}+{parm#1}) ns::thrice<int>(int)"): the
 * name proper is the part after the last space outside brackets before the parameter list,
 * the last parenthesis opened outside brackets, so "ns::twice<*>*" matches.  The symbols of
 * an operator name ("operator<", "operator()") are not brackets.  name_scan returns where
 * the name proper starts and sets *paren to that parenthesis (NULL: none).
 */
static const char *name_scan(const char *d, const char **paren)
{
	const char *p, *op, *seg = d, *start = d;
	int depth = 0;

	*paren = NULL;
	for (p = d; *p; p++) {
		if ((op = ftrt_operator_end(d, p))) {
			p = op;
			continue;
		}
		if (strchr("<[({", *p)) {
			if (*p == '(' && depth == 0) {
				start = seg;
				*paren = p;
			}
			depth++;
		} else if (strchr(">])}", *p) && depth > 0) {
			depth--;
		} else if (*p == ' ' && depth == 0) {
			seg = p + 1;
		}
	}
	return start;
}

size_t ftrt_name_plen(const char *d)
{
	const char *paren;

	name_scan(d, &paren);
	return paren ? (size_t)(paren - d) : 0;
}

int ftrt_prefix_matches(const char *pat, const char *name, size_t n)
{
	char buf[1024];

	if (!n || n >= sizeof(buf))
		return 0;
	memcpy(buf, name, n);
	buf[n] = 0;
	if (!fnmatch(pat, buf, 0) || !strcmp(pat, buf))
		return 1;
	/* also without its ABI tags: 'Json::Value::asString' for
	   Json::Value::asString[abi:cxx11]() (a std::string result's tag) */
	return ftrt_cut_abi_tags(buf) && !fnmatch(pat, buf, 0);
}

int ftrt_cut_abi_tags(char *s)
{
	int cut = 0;

	for (char *t, *e; (t = strstr(s, "[abi:")) && (e = strchr(t, ']')); cut = 1)
		memmove(t, e + 1, strlen(e + 1) + 1);
	return cut;
}

/*
 * Without a demangler (a C++ program linked without libstdc++): does the plain name pat
 * ("twice", no glob characters, no scope) name the global function whose symbol is sym —
 * _Z<length><name> and its parameters ("_Z5twicei"), any overload, as a name without its
 * parameter list matches with one.  Names in a scope (_ZN…) need the demangler.
 */
int ftrt_mangled_plain_matches(const char *pat, const char *sym)
{
	size_t n = strlen(pat);
	char pre[32];
	int k;

	if (!n || sym[0] != '_' || sym[1] != 'Z' || strpbrk(pat, "*?[:( <>~"))
		return 0;
	k = snprintf(pre, sizeof(pre), "_Z%zu", n);
	if (k <= 0 || (size_t)k >= sizeof(pre) || strncmp(sym, pre, (size_t)k) ||
	    strncmp(sym + k, pat, n))
		return 0;
	/* then its parameters, an ABI tag or template arguments; not more of a name */
	return sym[k + n] && !isdigit((unsigned char)sym[k + n]) && sym[k + n] != '.';
}

static const char *short_name(const char *d)
{
	const char *paren;

	return name_scan(d, &paren);
}

static demangle_fn demangler;

/* The process's __cxa_demangle (libstdc++), NULL while it has none. */
static demangle_fn demangler_get(void)
{
	demangle_fn d = __atomic_load_n(&demangler, __ATOMIC_ACQUIRE);

	if (!d) {
		d = (demangle_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "__cxa_demangle");
		if (d)
			__atomic_store_n(&demangler, d, __ATOMIC_RELEASE);
	}
	return d;
}

/*
 * A C++ program that uses nothing of libstdc++ is linked without it (--as-needed, Debian's
 * default), and its C++ names could then not be demangled: a filter naming 'ns::f'
 * matched nothing. When a filter or spec names C++ functions, the library is loaded for
 * its demangler (local symbols, once; its initialisation allocates its exception pool):
 * what the user asked for by naming them — in a program that has C++ names: a C program
 * given a glob with a '(' does not get libstdc++ mapped into it.  dlopen runs constructors
 * and takes the loader's lock, and the runtime's dlopen hook then takes the core lock:
 * never under it.
 */
void ftrt_demangler_want(const char *text, size_t len)
{
	static int tried;
	void *h;

	if (!text || (!memmem(text, len, "::", 2) && !memchr(text, '(', len)) || demangler_get() ||
	    !ftrt_objects_need_demangler() || __atomic_exchange_n(&tried, 1, __ATOMIC_ACQ_REL))
		return;
	h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (h) {
		demangle_fn d = (demangle_fn)(uintptr_t)dlsym(h, "__cxa_demangle");

		if (d)
			__atomic_store_n(&demangler, d, __ATOMIC_RELEASE);
	}
}

int ftrt_have_demangler(void)
{
	return demangler_get() != NULL;
}

void ftrt_syms_demangle(struct ftrt_syms *s)
{
	demangle_fn demangle;
	size_t i, nz = 0;

	if (!s || s->demangle_done || !(demangle = demangler_get()))
		return;
	s->demangle_done = 1;
	for (i = 0; i < s->n; i++)
		nz += !strncmp(s->v[i].name, "_Z", 2);
	s->demangled = calloc(nz, sizeof(char *));
	for (i = 0; s->demangled && i < s->n; i++) {
		int status = 0;
		char *d;

		if (strncmp(s->v[i].name, "_Z", 2))
			continue;
		d = demangle(s->v[i].name, NULL, NULL, &status);
		if (d && !status && s->ndemangled < nz) {
			s->demangled[s->ndemangled++] = d;
			s->v[i].shortname = short_name(d);
			s->v[i].plen = (unsigned)ftrt_name_plen(s->v[i].shortname);
			/* last: a lookup that sees the name sees its short form */
			__atomic_store_n(&s->v[i].demangled, d, __ATOMIC_RELEASE);
		} else {
			free(d);
		}
	}
}

/* A failure that may not happen again: no descriptor or memory left now, a signal. */
static int transient(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOMEM || err == EINTR || err == EAGAIN;
}

/*
 * Load the function symbols of path (.symtab, else .dynsym), sorted by address, with
 * demangled names for C++ symbols when the process has __cxa_demangle (libstdc++; later,
 * ftrt_syms_demangle, if it gets one).  A file without them gives an empty table; NULL
 * (errno set) when they could not be read this time only — no descriptor left (a server at
 * its limit), no memory — so that the caller asks again later, not "no names" for ever.
 */
struct ftrt_syms *ftrt_elf_load_syms(const char *path, uintptr_t bias)
{
	struct ftrt_syms *s = calloc(1, sizeof(*s));
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	Elf64_Sym *st = NULL;
	size_t shnum, i, nsym, pick = 0, nz = 0;
	int fd, err;

	if (!s)
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (!transient(err = errno))
			return s;	/* no file (vdso): no names */
		free(s);
		errno = err;
		return NULL;
	}
	errno = 0;
	if (read_shdrs(fd, &eh, &sh, &shnum))
		goto out;
	for (i = 1; i < shnum; i++)
		if (sh[i].sh_type == SHT_SYMTAB)
			pick = i;
	if (!pick)
		for (i = 1; i < shnum; i++)
			if (sh[i].sh_type == SHT_DYNSYM)
				pick = i;
	if (!pick || sh[pick].sh_link >= shnum || sh[pick].sh_entsize != sizeof(Elf64_Sym))
		goto out;
	st = (Elf64_Sym *)read_section(fd, &sh[pick]);
	s->strtab = read_section(fd, &sh[sh[pick].sh_link]);
	if (!st || !s->strtab)
		goto out;
	nsym = sh[pick].sh_size / sizeof(Elf64_Sym);
	s->v = malloc(nsym * sizeof(*s->v));
	if (!s->v) {
		errno = ENOMEM;
		goto out;
	}
	for (i = 1; i < nsym; i++) {
		unsigned type = ELF64_ST_TYPE(st[i].st_info);

		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || st[i].st_shndx == SHN_UNDEF ||
		    !st[i].st_value || st[i].st_name >= sh[sh[pick].sh_link].sh_size)
			continue;
		s->v[s->n].addr = bias + st[i].st_value;
		s->v[s->n].size = st[i].st_size;
		s->v[s->n].name = s->strtab + st[i].st_name;
		{
			/* a versioned name ("lzma_code@@XZ_5.0", .symver): the name the source
			   and the filters use (our copy of the table; a suffix sharing it is cut
			   at the same '@') */
			char *at = strchr(s->strtab + st[i].st_name, '@');

			if (at && at != s->strtab + st[i].st_name)
				*at = 0;
		}
		s->v[s->n].demangled = NULL;
		s->v[s->n].shortname = NULL;
		s->v[s->n].plen = 0;
		s->v[s->n].rank = sym_rank(&st[i], s->v[s->n].name);
		if (s->v[s->n].name[0] == '_' && s->v[s->n].name[1] == 'Z')
			nz++;
		s->n++;
	}
	qsort(s->v, s->n, sizeof(*s->v), sym_cmp);
	s->demangle_done = !nz;
	ftrt_syms_demangle(s);
	errno = 0;
out:
	err = errno;
	free(st);
	free(sh);
	close(fd);
	if (transient(err)) {
		ftrt_syms_free(s);
		errno = err;
		return NULL;
	}
	return s;
}

void ftrt_syms_free(struct ftrt_syms *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->ndemangled; i++)
		free(s->demangled[i]);
	free(s->demangled);
	free(s->v);
	free(s->strtab);
	free(s);
}

/* The function symbol containing addr (the closest one at or below it), or NULL. */
const struct ftrt_sym *ftrt_syms_lookup(const struct ftrt_syms *s, uintptr_t addr)
{
	size_t lo = 0, hi;
	const struct ftrt_sym *best;

	if (!s || !s->n)
		return NULL;
	hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	best = &s->v[lo - 1];	/* aliases at one address: sorted so that the best is last */
	if (best->size && addr >= best->addr + best->size)
		return NULL;
	return best;
}
