/* SPDX-License-Identifier: MIT */
/*
 * A small streaming JSON writer: it tracks commas and indentation so the
 * callers only name keys and values. Keys are NULL inside arrays.
 */
#ifndef GPUBUF_TOOLS_JSON_H
#define GPUBUF_TOOLS_JSON_H

#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH	16

struct json {
	FILE *f;
	int depth;
	int count[JSON_MAX_DEPTH];
};

void json_init(struct json *j, FILE *f);
void json_obj_begin(struct json *j, const char *key);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j, const char *key);
void json_arr_end(struct json *j);
void json_str(struct json *j, const char *key, const char *val);
void json_u64(struct json *j, const char *key, uint64_t val);
void json_int(struct json *j, const char *key, long long val);
/* Non-finite values are written as null, which JSON can represent. */
void json_dbl(struct json *j, const char *key, double val);
void json_bool(struct json *j, const char *key, int val);
void json_null(struct json *j, const char *key);
/* Ends the document with a newline. */
void json_finish(struct json *j);

#endif
