// SPDX-License-Identifier: MIT
/* Streaming JSON writer; see json.h. */
#include <math.h>
#include <stdio.h>

#include "json.h"

void json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->count[0] = 0;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* Separator, newline and indentation before a member, then its key. */
static void json_member(struct json *j, const char *key)
{
	if (j->depth > 0) {
		fputs(j->count[j->depth] ? ",\n" : "\n", j->f);
		fprintf(j->f, "%*s", 2 * j->depth, "");
	}
	j->count[j->depth]++;
	if (key) {
		json_string(j->f, key);
		fputs(": ", j->f);
	}
}

static void json_open(struct json *j, const char *key, char c)
{
	json_member(j, key);
	fputc(c, j->f);
	if (j->depth < JSON_MAX_DEPTH - 1)
		j->depth++;
	j->count[j->depth] = 0;
}

static void json_close(struct json *j, char c)
{
	int had = j->count[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (had)
		fprintf(j->f, "\n%*s", 2 * j->depth, "");
	fputc(c, j->f);
}

void json_obj_begin(struct json *j, const char *key)
{
	json_open(j, key, '{');
}

void json_obj_end(struct json *j)
{
	json_close(j, '}');
}

void json_arr_begin(struct json *j, const char *key)
{
	json_open(j, key, '[');
}

void json_arr_end(struct json *j)
{
	json_close(j, ']');
}

void json_str(struct json *j, const char *key, const char *val)
{
	json_member(j, key);
	json_string(j->f, val ? val : "");
}

void json_u64(struct json *j, const char *key, uint64_t val)
{
	json_member(j, key);
	fprintf(j->f, "%llu", (unsigned long long)val);
}

void json_int(struct json *j, const char *key, long long val)
{
	json_member(j, key);
	fprintf(j->f, "%lld", val);
}

void json_dbl(struct json *j, const char *key, double val)
{
	json_member(j, key);
	if (isfinite(val))
		fprintf(j->f, "%.6g", val);
	else
		fputs("null", j->f);
}

void json_bool(struct json *j, const char *key, int val)
{
	json_member(j, key);
	fputs(val ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	json_member(j, key);
	fputs("null", j->f);
}

void json_finish(struct json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}
