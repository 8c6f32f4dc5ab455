/* The one logger: fixed "cgraft:" prefix, levels, and whose fault it is.
 * It never calls CUDA, so it is safe from any hook. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "log.h"

int cg_log_level = CG_LOG_WARN;

void cg_log(enum cg_level level, enum cg_fault fault, const char *fmt, ...)
{
	static const char *const lv[] = { "error", "warning", "info", "debug" };
	static const char *const who[] = { "", " (program)", " (cgraft bug)", " (driver)" };
	if ((int)level > cg_log_level)
		return;
	char line[1024];
	int n = snprintf(line, sizeof line, "cgraft: %s%s: ", lv[level], who[fault]);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < sizeof line)
		n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof line - 1)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	/* One write: lines from several processes or threads do not interleave. */
	ssize_t w = write(STDERR_FILENO, line, (size_t)n);
	(void)w;
}
