/* The cgraft command: turns options into the CGRAFT_* variables of the one
 * table (src/options.c), checked with the library's own parser, puts
 * libcgraft.so in front of LD_PRELOAD and runs the program in its place.
 * The library is the one installed with this launcher (found relative to
 * /proc/self/exe), the build tree's for the launcher of the build tree, or
 * CGRAFT_LIB. It also prints its help and, for the build, its man page. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"

/* Given by the build: the version, the path from bindir to libdir, and where
 * the launcher and the library of the build tree are. */
#ifndef CG_VERSION
#error "CG_VERSION is set by launcher/meson.build"
#endif

#define CG_LIB_NAME "libcgraft.so"
#define CG_USAGE "cgraft [OPTION]... [--] PROGRAM [ARG]..."

enum { CG_EXIT_USAGE = 2, CG_EXIT_CANNOT_RUN = 126, CG_EXIT_NOT_FOUND = 127 };

/* One line on stderr, then the exit status. */
static void cg_die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

static void cg_die(int status, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "cgraft: %s\n", line);
	exit(status);
}

/* CGRAFT_FOO_BAR as an option: foo-bar. */
static void cg_flag_of(const char *name, char *flag, size_t size)
{
	const char *s = name + strlen("CGRAFT_");
	size_t n = 0;
	for (; *s && n + 1 < size; s++, n++)
		flag[n] = *s == '_' ? '-' : (char)(*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s);
	flag[n] = 0;
}

/* The row whose option is flag (without its dashes), or -1. */
static int cg_row_of_flag(const char *flag, size_t len)
{
	char f[64];
	struct cg_option_info info;
	for (size_t i = 0; !cg_options_info(i, &info); i++) {
		cg_flag_of(info.name, f, sizeof f);
		if (strlen(f) == len && !strncmp(f, flag, len))
			return (int)i;
	}
	return -1;
}

/* Edit distance of two short words, for a suggestion. */
static size_t cg_distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b), row[64];
	if (la >= 64 || lb >= 64)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* " (did you mean --x?)" for the option nearest to flag, or "". */
static void cg_suggest(const char *flag, size_t len, char *out, size_t size)
{
	char f[64], best[64] = "";
	size_t best_d = (len < 6 ? 1 : len / 3) + 1; /* a third of the word changed at most */
	struct cg_option_info info;
	out[0] = 0;
	for (size_t i = 0; !cg_options_info(i, &info); i++) {
		cg_flag_of(info.name, f, sizeof f);
		size_t d = len >= 3 && !strncmp(f, flag, len) ? 1 : cg_distance(flag, len, f);
		if (d < best_d) {
			best_d = d;
			snprintf(best, sizeof best, "%s", f);
		}
	}
	if (best[0])
		snprintf(out, size, " (did you mean --%s?)", best);
}

/* What the command line asks for: a value for each row of the table (NULL
 * where it gives none), the program and its arguments, or one of the
 * launcher's own answers. A boolean alone means 1, --no-NAME 0; every option
 * takes --NAME=VALUE, and the others --NAME VALUE too. */
struct cg_cmdline {
	const char **value;
	char **prog;
	int help, version, man;
};

static void cg_parse_args(int argc, char **argv, struct cg_cmdline *c)
{
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break; /* the program */
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			c->help = 1;
			return;
		}
		if (!strcmp(a, "--version")) {
			c->version = 1;
			return;
		}
		if (!strcmp(a, "--man")) {
			c->man = 1;
			return;
		}
		if (a[1] != '-')
			cg_die(CG_EXIT_USAGE, "unknown option '%s': options are long, e.g. --report (cgraft --help lists them)",
			       a);
		const char *flag = a + 2, *eq = strchr(flag, '=');
		size_t len = eq ? (size_t)(eq - flag) : strlen(flag);
		int negated = 0, row = cg_row_of_flag(flag, len);
		struct cg_option_info info;
		if (row < 0 && len > 3 && !strncmp(flag, "no-", 3)) {
			row = cg_row_of_flag(flag + 3, len - 3);
			negated = row >= 0;
		}
		if (row < 0) {
			char hint[96];
			cg_suggest(flag, len, hint, sizeof hint);
			cg_die(CG_EXIT_USAGE, "unknown option '--%.*s'%s; cgraft --help lists the options", (int)len, flag,
			       hint);
		}
		cg_options_info((size_t)row, &info);
		if (negated && info.metavar)
			cg_die(CG_EXIT_USAGE, "unknown option '--%.*s': --%.*s takes a value %s and has no --no- form",
			       (int)len, flag, (int)len - 3, flag + 3, info.metavar);
		const char *value;
		if (negated) {
			if (eq)
				cg_die(CG_EXIT_USAGE, "--%.*s takes no value: it sets %s to 0 (--%.*s=VALUE gives another)",
				       (int)len, flag, info.name, (int)len - 3, flag + 3);
			value = "0";
		} else if (eq) {
			value = eq + 1;
		} else if (!info.metavar) {
			value = "1";
		} else if (i + 1 >= argc || (argv[i + 1][0] == '-' && argv[i + 1][1])) {
			char expected[160] = "", dash[160] = "";
			cg_options_check(info.name, "", expected, sizeof expected);
			if (i + 1 < argc)
				snprintf(dash, sizeof dash, " (write --%s=VALUE for a value that starts with '-')", flag);
			cg_die(CG_EXIT_USAGE, "--%s needs a value %s%s%s%s", flag, info.metavar, expected[0] ? ": " : "",
			       expected, dash);
		} else {
			value = argv[++i];
		}
		char msg[160];
		if (cg_options_check(info.name, value, msg, sizeof msg))
			cg_die(CG_EXIT_USAGE, "--%.*s: '%s' is not accepted: %s", (int)len, flag, value, msg);
		c->value[row] = value;
	}
	c->prog = argv + i;
}

/* Whether path names the same file as the running launcher. */
static int cg_is_self(const char *path)
{
	struct stat a, b;
	return !stat("/proc/self/exe", &a) && !stat(path, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The library to preload, as an absolute path; what was looked for in why
 * when there is none. */
static int cg_find_lib(char *lib, char *why, size_t size)
{
	const char *env = getenv("CGRAFT_LIB");
	if (env && *env) {
		if (!realpath(env, lib)) {
			snprintf(why, size, "CGRAFT_LIB=%s: %s", env, strerror(errno));
			return -1;
		}
		return 0;
	}
#ifdef CG_BUILD_EXE
	if (cg_is_self(CG_BUILD_EXE)) {
		if (!realpath(CG_BUILD_LIB, lib)) {
			snprintf(why, size, "%s: not built yet (ninja -C the build directory), or set CGRAFT_LIB", CG_BUILD_LIB);
			return -1;
		}
		return 0;
	}
#endif
	char self[PATH_MAX], want[PATH_MAX + 64], dir[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		snprintf(why, size, "cannot read /proc/self/exe (%s); set CGRAFT_LIB", strerror(errno));
		return -1;
	}
	self[n] = 0;
	*strrchr(self, '/') = 0;
	snprintf(want, sizeof want, "%s/%s", self, CG_LIBDIR_FROM_BINDIR);
	if (realpath(want, dir))
		snprintf(want, sizeof want, "%s/%s", dir, CG_LIB_NAME);
	else
		snprintf(want + strlen(want), sizeof want - strlen(want), "/%s", CG_LIB_NAME);
	if (!realpath(want, lib)) {
		snprintf(why, size, "%s: %s (the library installed with this launcher; CGRAFT_LIB names another)",
			 want, strerror(errno));
		return -1;
	}
	return 0;
}

/* LD_PRELOAD with lib in front, unless it is there already. */
static char *cg_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	if (strpbrk(lib, " :"))
		cg_die(CG_EXIT_USAGE, "%s: LD_PRELOAD cannot carry a path with a space or a colon; set CGRAFT_LIB to a copy "
		       "elsewhere", lib);
	size_t len = strlen(lib) + (old ? strlen(old) : 0) + 2;
	char *out = malloc(len);
	if (!out)
		cg_die(CG_EXIT_CANNOT_RUN, "out of memory");
	if (old && *old) {
		const char *p = old;
		size_t ll = strlen(lib);
		while (*p) {
			size_t w = strcspn(p, " :");
			if (w == ll && !strncmp(p, lib, ll)) {
				snprintf(out, len, "%s", old);
				return out;
			}
			p += w;
			p += strspn(p, " :");
		}
		snprintf(out, len, "%s:%s", lib, old);
	} else {
		snprintf(out, len, "%s", lib);
	}
	return out;
}

/* Prints text wrapped at width, each line after the first indented. */
static void cg_wrap(FILE *f, const char *text, int col, int indent, int width)
{
	const char *p = text;
	while (*p) {
		size_t w = strcspn(p, " ");
		if (col > indent && col + 1 + (int)w > width) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fwrite(p, 1, w, f);
		col += (int)w;
		p += w;
		p += strspn(p, " ");
	}
	fputc('\n', f);
}

static const char cg_about[] =
	"Runs PROGRAM with libcgraft.so preloaded: the repeating CUDA work of PROGRAM, and of every process it starts "
	"(torchrun, python -m, mpirun, shell scripts), is replayed as CUDA graphs; whatever cgraft cannot prove "
	"equivalent runs eagerly, in the original order.";
static const char cg_about_options[] =
	"Each option sets the CGRAFT_* variable of its name, which the processes PROGRAM starts inherit. A boolean "
	"option alone means 1 and --no-NAME means 0; every option also takes --NAME=VALUE. An option overrides the "
	"variable set in the environment, which is checked as the options are. The options end at the first "
	"argument that does not start with '-', or at '--' (needed when PROGRAM does).";
static const char cg_about_stats[] =
	"Where PROGRAM starts several processes, give --stats (and --profile-trace) a path with %p, e.g. "
	"--stats stats-%p.json: each process writes its own file. A path without %p is used as given, and the last "
	"process to exit that called CUDA writes it.";
static const char cg_about_lib[] =
	"The libcgraft.so to preload; without it, the one installed with this launcher (or, for the launcher of a "
	"build tree, the one built there).";
static const char cg_about_status[] =
	"2 for an option or a value that is not accepted (one line on stderr names it), 127 when PROGRAM is not "
	"found, 126 when it cannot be run; otherwise PROGRAM's own.";

static void cg_print_help(FILE *f)
{
	fprintf(f, "Usage: %s\n", CG_USAGE);
	cg_wrap(f, cg_about, 0, 0, 79);
	fputc('\n', f);
	cg_wrap(f, cg_about_options, 0, 0, 79);
	fputc('\n', f);
	struct cg_option_info info;
	char flag[64], left[160];
	for (size_t i = 0; !cg_options_info(i, &info); i++) {
		cg_flag_of(info.name, flag, sizeof flag);
		if (info.metavar)
			snprintf(left, sizeof left, "  --%s %s", flag, info.metavar);
		else
			snprintf(left, sizeof left, "  --%s, --no-%s", flag, flag);
		fprintf(f, "%s\n", left);
		char text[1024];
		if (info.metavar)
			snprintf(text, sizeof text, "%s. %s, default %s; accepts %s.", info.what, info.name, info.deflt,
				 info.accepted);
		else
			snprintf(text, sizeof text, "%s. %s, default %s.", info.what, info.name, info.deflt);
		text[0] = (char)(text[0] >= 'a' && text[0] <= 'z' ? text[0] - 'a' + 'A' : text[0]);
		fprintf(f, "%*s", 8, "");
		cg_wrap(f, text, 8, 8, 79);
	}
	fprintf(f, "  -h, --help\n        Prints this help.\n");
	fprintf(f, "  --version\n        Prints the version and the library this launcher preloads.\n\n");
	cg_wrap(f, cg_about_stats, 0, 0, 79);
	fprintf(f, "\nEnvironment:\n  CGRAFT_LIB\n        ");
	cg_wrap(f, cg_about_lib, 8, 8, 79);
	fprintf(f, "  LD_PRELOAD\n        Kept: the library is put in front of it.\n\nExit status:");
	cg_wrap(f, cg_about_status, 12, 0, 79);
}

/* Text for roff: backslashes and dashes escaped, no line starting with a
 * control character. */
static void cg_roff(FILE *f, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", f);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
	}
}

static void cg_print_man(FILE *f)
{
	fprintf(f, ".TH CGRAFT 1 \"\" \"cgraft %s\" \"User Commands\"\n", CG_VERSION);
	fprintf(f, ".nh\n");
	fprintf(f, ".SH NAME\ncgraft \\- run a CUDA program with its repeating work replayed as CUDA graphs\n");
	fprintf(f, ".SH SYNOPSIS\n.B cgraft\n[\\fIOPTION\\fR]... [\\fB\\-\\-\\fR] \\fIPROGRAM\\fR [\\fIARG\\fR]...\n");
	fprintf(f, ".SH DESCRIPTION\n");
	cg_roff(f, cg_about);
	fprintf(f, "\n.PP\n");
	cg_roff(f, cg_about_options);
	fprintf(f, "\n.SH OPTIONS\n");
	struct cg_option_info info;
	char flag[64];
	for (size_t i = 0; !cg_options_info(i, &info); i++) {
		cg_flag_of(info.name, flag, sizeof flag);
		fprintf(f, ".TP\n\\fB\\-\\-");
		cg_roff(f, flag);
		if (info.metavar) {
			fprintf(f, "\\fR \\fI");
			cg_roff(f, info.metavar);
			fprintf(f, "\\fR\n");
		} else {
			fprintf(f, "\\fR, \\fB\\-\\-no\\-");
			cg_roff(f, flag);
			fprintf(f, "\\fR\n");
		}
		char what[1024];
		snprintf(what, sizeof what, "%s", info.what);
		what[0] = (char)(what[0] >= 'a' && what[0] <= 'z' ? what[0] - 'a' + 'A' : what[0]);
		cg_roff(f, what);
		fprintf(f, ".\nSets \\fB");
		cg_roff(f, info.name);
		fprintf(f, "\\fR; default ");
		cg_roff(f, info.deflt);
		fprintf(f, "; accepts ");
		cg_roff(f, info.accepted);
		fprintf(f, ".\n");
	}
	fprintf(f, ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nPrints the options.\n");
	fprintf(f, ".TP\n\\fB\\-\\-version\\fR\nPrints the version and the library this launcher preloads.\n");
	fprintf(f, ".PP\n");
	cg_roff(f, cg_about_stats);
	fprintf(f, "\n.SH ENVIRONMENT\n.TP\n\\fBCGRAFT_LIB\\fR\n");
	cg_roff(f, cg_about_lib);
	fprintf(f, "\n.TP\n\\fBLD_PRELOAD\\fR\nKept: the library is put in front of it.\n");
	fprintf(f, ".TP\n\\fBCGRAFT_*\\fR\nThe options above, set by hand.\n");
	fprintf(f, ".SH EXIT STATUS\n");
	cg_roff(f, cg_about_status);
	fprintf(f, "\n.SH EXAMPLES\n.nf\n");
	fprintf(f, "cgraft \\-\\-report ./my_program args\n");
	fprintf(f, "cgraft \\-\\-stats stats\\-%%p.json \\-\\- torchrun \\-\\-nproc_per_node=8 train.py\n");
	fprintf(f, "cgraft \\-\\-log debug \\-\\-window 100:5000 python \\-m mypackage.train\n.fi\n");
	fprintf(f, ".SH SEE ALSO\n\\fBld.so\\fR(8)\n");
}

int main(int argc, char **argv)
{
	size_t nopt = cg_options_count();
	struct cg_cmdline c = { .value = calloc(nopt, sizeof(const char *)) };
	if (!c.value)
		cg_die(CG_EXIT_CANNOT_RUN, "out of memory");
	cg_parse_args(argc, argv, &c);
	if (c.help || c.man) {
		if (c.help)
			cg_print_help(stdout);
		else
			cg_print_man(stdout);
		free(c.value);
		return 0;
	}
	char lib[PATH_MAX], why[PATH_MAX + 256];
	int have_lib = !cg_find_lib(lib, why, sizeof why);
	if (c.version) {
		printf("cgraft %s\nlibrary: %s\n", CG_VERSION, have_lib ? lib : why);
		free(c.value);
		return 0;
	}
	if (!*c.prog)
		cg_die(CG_EXIT_USAGE, "no program given; usage: %s (cgraft --help)", CG_USAGE);

	/* What the environment sets already is checked as the options are: the
	 * library would otherwise run the program in pass-through. */
	struct cg_option_info info;
	for (size_t i = 0; !cg_options_info(i, &info); i++) {
		const char *env = getenv(info.name);
		char msg[160];
		if (!c.value[i] && env && cg_options_check(info.name, env, msg, sizeof msg))
			cg_die(CG_EXIT_USAGE, "%s='%s' in the environment is not accepted: %s", info.name, env, msg);
	}
	if (!have_lib)
		cg_die(CG_EXIT_USAGE, "%s", why);
	for (size_t i = 0; i < nopt; i++)
		if (c.value[i] && !cg_options_info(i, &info) && setenv(info.name, c.value[i], 1))
			cg_die(CG_EXIT_CANNOT_RUN, "cannot set %s: %s", info.name, strerror(errno));
	char *preload = cg_preload(lib);
	if (setenv("LD_PRELOAD", preload, 1))
		cg_die(CG_EXIT_CANNOT_RUN, "cannot set LD_PRELOAD: %s", strerror(errno));
	free(preload);

	execvp(c.prog[0], c.prog);
	if (errno == ENOENT)
		cg_die(CG_EXIT_NOT_FOUND, "%s: command not found", c.prog[0]);
	cg_die(CG_EXIT_CANNOT_RUN, "cannot run %s: %s", c.prog[0], strerror(errno));
}
