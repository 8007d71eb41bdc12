// SPDX-License-Identifier: MIT
/*
 * --plot: host bandwidth against transfer size, one line per op and kind
 * of memory, drawn by gnuplot through a pipe. gnuplot is optional.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

static int plot_have_gnuplot(void)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	char file[4096];
	int found = 0;

	if (!path || !*path)
		path = "/usr/bin:/bin";
	copy = strdup(path);
	if (!copy)
		return 0;
	for (dir = strtok_r(copy, ":", &save); dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(file, sizeof(file), "%s/gnuplot", dir);
		found = !access(file, X_OK);
	}
	free(copy);
	return found;
}

static void plot_quote(FILE *p, const char *s)
{
	fputc('"', p);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', p);
		fputc(*s, p);
	}
	fputc('"', p);
}

static int plot_series(const struct bench *b, FILE *p, int emit)
{
	static const char *const ops[] = { "read", "write", "copy" };
	static const char *const mems[] = { "gpubuf", "malloc", "mlock",
					    "hugetlb" };
	int o, m, i, n = 0;

	for (o = 0; o < 3; o++) {
		for (m = 0; m < 4; m++) {
			int any = 0;

			for (i = 0; i < b->nr_res; i++) {
				const struct result *r = &b->res[i];

				if (r->mode != MODE_HOST || r->status != RES_OK ||
				    strcmp(r->op, ops[o]) || strcmp(r->memory, mems[m]))
					continue;
				if (emit == 1 && !any)
					fprintf(p, "$d%d << EOD\n", n);
				if (emit == 1)
					fprintf(p, "%llu %g\n",
						(unsigned long long)r->size_bytes,
						r->med);
				any = 1;
			}
			if (!any)
				continue;
			if (emit == 1)
				fputs("EOD\n", p);
			if (emit == 2)
				fprintf(p, "%s$d%d using 1:2 with linespoints title \"%s %s\"",
					n ? ", " : "plot ", n, ops[o], mems[m]);
			n++;
		}
	}
	if (emit == 2 && n)
		fputc('\n', p);
	return n;
}

int plot_write(struct bench *b, const char *file)
{
	const char *dot = strrchr(file, '.');
	int svg = dot && !strcmp(dot, ".svg");
	FILE *p;
	int rc;

	if (!dot || (!svg && strcmp(dot, ".png"))) {
		fprintf(stderr, "ERROR: --plot %s: the name must end in .png or .svg\n",
			file);
		return EXIT_FAIL;
	}
	if (!plot_series(b, NULL, 0)) {
		fprintf(stderr, "note: --plot draws host bandwidth; there are no host results\n");
		return EXIT_OK;
	}
	if (!plot_have_gnuplot()) {
		fprintf(stderr, "note: gnuplot not found; install gnuplot-nox (no plot written)\n");
		return EXIT_OK;
	}
	p = popen("gnuplot", "w");
	if (!p) {
		fprintf(stderr, "ERROR: --plot: cannot start gnuplot\n");
		return EXIT_FAIL;
	}
	if (svg)
		fputs("set terminal svg size 1000,600 dynamic\n", p);
	else
		fputs("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) "
		      "{ set terminal pngcairo size 1000,600 } "
		      "else { set terminal png size 1000,600 }\n", p);
	fputs("set output ", p);
	plot_quote(p, file);
	fprintf(p, "\nset title \"gpubuf-bench host bandwidth (%s backend, %d thread(s))\"\n",
		b->hdr.backend, b->o.threads);
	fputs("set logscale x 2\nset format x '%.0b%B'\n"
	      "set xlabel 'transfer size (bytes)'\n"
	      "set ylabel 'GB/s (1e9 bytes/s), median'\n"
	      "set key outside right\nset grid\n", p);
	plot_series(b, p, 1);
	plot_series(b, p, 2);
	rc = pclose(p);
	if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc)) {
		fprintf(stderr, "ERROR: --plot: gnuplot failed writing %s\n", file);
		return EXIT_FAIL;
	}
	fprintf(stderr, "plot written to %s\n", file);
	return EXIT_OK;
}
